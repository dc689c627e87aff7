"""RPC worker addresses and the refusals that need no worker: bad addresses, an absent worker, a build without RPC."""

from __future__ import annotations

import pytest

from app.cli import main as cli_main
from app.engine.placement import rpc
from app.engine.errors import ModelLoadError
from tests.remote.llama_tools import free_port


def test_worker_addresses_are_parsed_and_bad_ones_refused_in_one_sentence():
    assert rpc.parse_endpoints(" 10.0.0.2:50052, gpu-box:50053,10.0.0.2:50052") == ("10.0.0.2:50052", "gpu-box:50053")
    assert rpc.parse_endpoints(["[::1]:50052"]) == ("[::1]:50052",)
    for bad in ("gpu-box", "gpu-box:0", "gpu-box:70000", "http://gpu-box:50052"):
        with pytest.raises(ValueError, match="is not an RPC worker address; use HOST:PORT"):
            rpc.parse_endpoints(bad)


def test_an_absent_worker_is_refused_before_llama_cpp_could_abort_on_it():
    port = free_port()
    with pytest.raises(ModelLoadError, match=f"Cannot reach the RPC worker at 127.0.0.1:{port}"):
        rpc.register([f"127.0.0.1:{port}"])


def test_a_build_without_rpc_says_how_to_get_one(monkeypatch):
    monkeypatch.setattr(rpc, "rpc_supported", lambda: False)
    with pytest.raises(ModelLoadError, match='CMAKE_ARGS="-DGGML_RPC=ON"'):
        rpc.register(["127.0.0.1:50052"])


def test_cli_rejects_bad_rpc_use(capsys, tiny_models):
    assert cli_main(["generate", "--target", str(tiny_models.target), "--prompt", "a", "--rpc", "nohost"]) == 2
    assert "not an RPC worker address" in capsys.readouterr().err
    assert cli_main(["generate", "--server", "http://x:1", "--model", "m", "--chat", "a", "--rpc", "h:1"]) == 2
    assert "a --server runs its model itself" in capsys.readouterr().err
