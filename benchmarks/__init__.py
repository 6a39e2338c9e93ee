"""Side-by-side benchmarks of posenc against the reference code and its peers.

``python -m benchmarks`` (``make bench``) runs every section in one process
and prints a table of **ratios measured side by side**: the contestants of a
row are timed in interleaved rounds (each round runs every contestant once,
in a rotating order), and a ratio is the median over rounds of the per-round
ratio, so that slow drifts of a shared machine cancel.  The same results are
written to ``benchmarks/results.json`` and ``benchmarks/RESULTS.md``.

Sections (``--only`` selects some):

``sinusoidal``
    float32 tables on NumPy and torch CPU against the seed texts' code
    (transcribed faithfully in :mod:`benchmarks.seeds`) and the
    ``positional-encodings`` package when installed; time ratio and max
    absolute error against the float64 truth.
``rope``
    ``apply_rope`` / ``rope`` on float32 ``(1, 32, 4096, 128)`` against a
    plain copy of the tensor and the Hugging Face ``rotate_half`` formula.
``cache``
    the second identical call against the first, and a check that mutating
    a returned array never changes a later result.
``scale``
    a Dask table of 2**22 x 512 float32 (8 GiB) reduced chunk by chunk in a
    fresh process: peak resident memory and equality with eager rows.
``gpu``
    CuPy / torch-CUDA tables and RoPE against a device copy (skipped without
    a GPU).

``python -m benchmarks --gpu-check`` is the device check of a GPU machine (the
GPU test lanes, device accuracy, every device target against its peer,
launches and syncs per call; a dry run without a device): see
:mod:`benchmarks.gpu_check`.  ``--merge-gpu`` puts its results into the GPU
section of ``results.json`` and ``RESULTS.md``.

Benchmarks are not tests: ``tests/test_benchmarks.py`` only runs
``python -m benchmarks --quick`` on tiny sizes.
"""
