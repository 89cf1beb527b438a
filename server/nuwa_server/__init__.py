"""Nuwa's server (the product): WebTransport sessions over aioquic, grants, the loss-based
ceiling, content, certificates and the WebSocket fallback. The lab (emulator, metrics,
reports, load generator) is the separate ``nuwa_lab`` package, never imported from here."""
