"""Open findings of the hardening suite in modules it does not own.

Each finding has an id, the module's owner and a one-line description.  While
a finding is open:

* its regression test in ``test_findings.py`` is ``xfail(strict=True)``
  (so the fix turns it into a failure that asks for the id to be removed
  here);
* the fuzz suite steers around it (``HOSTILE_SKIPS`` below and ``is_open``
  checks in the builders), so the rest of the function stays covered.

Fixing a finding: fix the code, delete its line from ``OPEN`` (and from
``HOSTILE_SKIPS``); the regression test then runs as a normal test.
"""

from __future__ import annotations

OPEN: dict[str, str] = {
    # id: "module: function, input -> what happened"  (the first round, P1-P10,
    # B1-B5, G1-G2, R1-R2, V1-V7, is fixed; the second came from a 4x deeper run)
    "N1": "bias: alibi_bias(..., slopes=1e300, dtype='float32') and kerple_bias(r1=1e300) overflow in the float32 cast (RuntimeWarning)",
    "N3": "fourier: fourier_features(np.zeros((0, 1)), 2**41, include_input=False): the empty output passes the size check, then 2**41 frequencies are allocated (MemoryError)",
    "N5": "viz: plot_wavelengths(2, quantity='frequency', base=1e-300) overflows in exp (RuntimeWarning)",
    "N8": "sinusoidal.py: sines(2**41, np.zeros(0)): the empty output passes the size check, then 2**41 positions are allocated (MemoryError)",
    "N9": "viz: plot_similarity_by_offset(2, offsets=<(2**41,) broadcast view>): NaN scan of a 2**41 array (MemoryError); check the size first",
    "N7": "scaling: LongRoPE(np.int64, [1.0], 2) (a class as short_factor) raises a TypeError about tolist() that does not name `short_factor`",
}


def is_open(fid: str) -> bool:
    return fid in OPEN


#: (function, parameter, hostile label or None for any) -> finding id
HOSTILE_SKIPS: dict[tuple[str, str, str | None], str] = {
    # ("sinusoidal", "base", "1e-300"): "P7",  -- example; ("*", "*", label) for any call
    ("alibi_bias", "slopes", "1e300"): "N1",
    ("kerple_bias", "r1", "1e300"): "N1",
    ("kerple_bias", "r2", "1e300"): "N1",
    ("fourier_features", "num_bands", "2**41"): "N3",
    ("fourier_features", "num_bands", "2**64"): "N3",
    ("posenc_viz.plot_wavelengths", "base", "1e-300"): "N5",
    ("posenc_viz.plot_wavelengths", "base", "1e300"): "N5",
    ("posenc_viz.plot_similarity_by_offset", "offsets", "broadcast 2**41"): "N9",
    ("sines", "positions", "2**41"): "N8",
    ("sines", "positions", "2**64"): "N8",
    ("scaling.LongRoPE", "short_factor", None): "N7",
    ("scaling.LongRoPE", "long_factor", None): "N7",
}


def hostile_skip(name: str, param: str, label: str) -> str | None:
    """The open finding a hostile call would hit, or None."""
    for key in ((name, param, label), (name, param, None), ("*", "*", label)):
        fid = HOSTILE_SKIPS.get(key)
        if fid is not None and is_open(fid):
            return fid
    return None
