"""Nuwa's lab: what measures the product (nuwa_server) and never ships with it.

Link emulator (:mod:`.emulator`), run metrics (:mod:`.bulk_metrics`,
:mod:`.play_metrics`, :mod:`.outage`), benchmark report (:mod:`.bench_report`),
load generator (:mod:`.load`), DASH content generator (:mod:`.dashgen`) and
Nuwa-RL evaluation (:mod:`.rl_eval`). It imports the product; the product never
imports it (the contract in ``.importlinter``, checked by ``./nuwa test``).
"""
