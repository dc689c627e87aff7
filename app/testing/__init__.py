"""What the bundle's self-test and the screenshot script need at run time: tiny models written on the spot.

- synthetic.py: Tiny GGUF models written on the spot, so tests, the bundle self-test and benchmarks run offline in seconds.
- shaped.py: Synthetic models of real shapes (1.5B-, 7B-class targets, a draft that agrees by construction), for the GPU check.
"""
