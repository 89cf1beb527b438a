"""PBQ (docs/PBQ.md): the training environment over the sender-side simulator, PPO training,
export to ONNX with metadata and parity fixtures. The controller it trains is the server's
own :class:`nuwa_server.cc.pbq.PbqCongestionControl`."""
