"""The schemes the report knows: their names, order and plot colours, in one place.

A new scheme gets its colour in ``COLORS`` and, for bulk runs, its place in
``BULK_SCHEME_ORDER`` (schemes not listed come after the listed ones, sorted).
"""

from __future__ import annotations

PLAY_ALIASES = {"cubic": "dashjs", "observe": "nuwa_cubic"}
"""Old names of video schemes (e2e/src/play.ts PLAY_ALIASES)."""
LADDER = ("dashjs", "dashjs_grants", "dashjs_nuwa_estimate", "nuwa", "nuwa_cubic")
"""The video ladder, each scheme one factor from its neighbour (e2e/src/play.ts PLAY_LADDER)."""
LADDER_STEPS = (
    ("dashjs", "dashjs_grants", "Nuwa's grants instead of the server's cubic (dash.js unchanged)"),
    ("dashjs_grants", "dashjs_nuwa_estimate", "Nuwa's estimate fed to dash.js's rules"),
    ("dashjs_nuwa_estimate", "nuwa", "Nuwa's ABR rule instead of dash.js's rules"),
    ("nuwa", "nuwa_cubic", "the server's cubic instead of Nuwa's grants (Nuwa ABR unchanged)"),
)
"""Neighbouring rungs of the ladder (from, to, the one factor that changes)."""
NUWA_ESTIMATE_SCHEMES = frozenset({"dashjs_nuwa_estimate", "nuwa", "nuwa_cubic", "nuwa_deepcap",
                                   "nuwa_robustmpc", "nuwa_nohyst", "nuwa_hyst", "nuwa_ahead",
                                   "nuwa_ahead_queue", "nuwa_noreserve", "nuwa_noprobe",
                                   "nuwa_probe", "nuwa_abandon", "nuwa_noinit", "nuwa_noretake",
                                   "dashjs_nuwa_ewma",
                                   "dashjs_nuwa_instant", "dashjs_nuwa_transfer",
                                   "dashjs_nuwa_sustained"})
"""Video schemes whose ABR decides on Nuwa's estimate (the others on dash.js's own);
``nuwa_robustmpc``: the twenty-eighth session's name of the shipped MPC (its report regenerates);
``nuwa_hyst``: the thirtieth session's name of the MPC with switch hysteresis, now ``nuwa``, and
``nuwa_nohyst`` the MPC without it; ``nuwa_ahead`` the MPC with the loader's fetch-ahead
(``nuwa_ahead_queue`` as deep as the standing wait needs);
``nuwa_noreserve`` the MPC without its terminal buffer reserve (the default before the
forty-fifth session); ``nuwa_probe`` the MPC with its first segment sized to measure the top rung
(opt-in ``first_probe``; the forty-ninth session's invocation ran it as ``nuwa`` and the default
as ``nuwa_noprobe``); ``nuwa_abandon`` the MPC with its abandonment rule
on (opt-in ``abandon: true``); ``nuwa_noinit`` the MPC without the loader's init-segment prefetch;
``nuwa_noretake`` the MPC without the loader's retry takeover of a timed-out transfer;
``dashjs_nuwa_ewma`` the thirty-second session's name of dash.js's rules on Nuwa's figure through
dash.js's own EWMA, now ``dashjs_nuwa_estimate``, and ``dashjs_nuwa_instant`` the figure without it;
``dashjs_nuwa_transfer`` the same rules on Nuwa's figure with the share measured per transfer;
``dashjs_nuwa_sustained`` with each segment's sample the lower of the figure at its request and
at its completion."""
BULK_SCHEME_ORDER = ("nuwa", "nuwa_fixed_td", "nuwa_adaptive", "nuwa_backlog", "nuwa_raw",
                     "nuwa_bbr", "oracle", "cubic", "reno", "bbr", "pbq", "dashjs",
                     "dashjs_nuwa_estimate", "observe")
"""Order of the bulk schemes in tables and plots."""
COLORS = {"nuwa": "C0", "nuwa_fixed_td": "navy", "nuwa_adaptive": "C2", "nuwa_backlog": "C7",
          "nuwa_raw": "C5",
          "oracle": "k", "cubic": "C3", "reno": "C1", "bbr": "C6", "nuwa_bbr": "C9",
          "dashjs_bbr": "C6", "pbq": "C8", "dashjs_pbq": "C8",
          "dashjs": "C3",
          "dashjs_grants": "C1", "dashjs_nuwa_estimate": "C2", "observe": "C4",
          "nuwa_cubic": "C4", "nuwa_deepcap": "C9", "nuwa_robustmpc": "C8",
          "nuwa_nohyst": "C8", "nuwa_hyst": "C6", "nuwa_ahead": "C7", "nuwa_noreserve": "C5",
          "nuwa_ahead_queue": "C9", "nuwa_noprobe": "C3", "nuwa_probe": "C3",
          "nuwa_abandon": "C6", "nuwa_noinit": "C7", "nuwa_noretake": "C8",
          "dashjs_nuwa_ewma": "C5", "dashjs_nuwa_instant": "C5", "dashjs_nuwa_transfer": "C9",
          "dashjs_nuwa_sustained": "C8",
          "aimd": "C3"}
"""Matplotlib colour of each scheme in the plots (others: ``C5``)."""
