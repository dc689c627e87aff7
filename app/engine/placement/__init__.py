"""Where a model runs: the backend's devices, GPU layer fitting and RPC workers.

- devices.py: The compute devices this build of llama.cpp can use, asked of its backend registry through ctypes.
- ggml_library.py: ggml's C functions, found on the libraries llama-cpp-python loaded (devices, RPC workers).
- gpu_fit.py: How many layers of the target and the draft go to the GPU when GPU layers are on Auto.
- rpc.py: llama.cpp RPC workers: one model's layers spread over `ggml-rpc-server` processes on other machines.
- rpc_check.py: Is an RPC worker a ggml-rpc-server this llama.cpp can use? Asked by a child process that may die instead, with a timeout.
"""
