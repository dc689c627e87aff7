"""Search and listing through huggingface_hub's real HfApi, against the fake Hub on 127.0.0.1."""

from __future__ import annotations

import socket
from urllib.parse import parse_qs

import pytest
from fake_hf_server import GOOD_TOKEN, payload

from app.hub import token as hub_token
from app.hub.client import HubClient
from app.hub.errors import GatedRepoError, HubUnavailableError, InvalidTokenError, NotFoundError, OfflineError
from app.hub.repo_files import group_gguf_files, quant_of, RemoteFile


@pytest.fixture
def hub(fake_hub):
    fake_hub.add_repo(
        "acme/Coder-7B-GGUF",
        {
            "Coder-7B-Q4_K_M.gguf": payload(3000, 1),
            "Coder-7B-Q8_0.gguf": payload(5000, 2),
            "Q8_0/Coder-7B-BF16-00001-of-00002.gguf": payload(4000, 3),
            "Q8_0/Coder-7B-BF16-00002-of-00002.gguf": payload(2000, 4),
            "README.md": b"# Coder",
        },
        downloads=500,
    )
    fake_hub.add_repo("acme/Chat-1B-GGUF", {"chat-1b-q4_k_m.gguf": payload(1000, 5)}, downloads=900)
    fake_hub.add_repo("acme/Coder-7B", {"model.safetensors": b"x" * 100}, tags=("safetensors",), downloads=9999)
    fake_hub.add_repo("meta/Gated-GGUF", {"gated-Q4_K_M.gguf": payload(1000, 6)}, gated=True)
    return fake_hub


def test_search_returns_gguf_repos_most_downloaded_first(hub):
    results = HubClient().search_gguf("acme")
    assert [r.repo_id for r in results] == ["acme/Chat-1B-GGUF", "acme/Coder-7B-GGUF"]
    assert results[0].downloads == 900
    # The request went through HfApi.list_models with the gguf filter: the Hub, not the client, leaves out
    # repositories without GGUF files.
    searches = [parse_qs(r.query) for r in hub.requests if r.path == "/api/models"]
    assert searches and all("gguf" in query.get("filter", []) for query in searches)


def test_search_matches_the_query_and_flags_gated_repos(hub):
    assert [r.repo_id for r in HubClient().search_gguf("coder")] == ["acme/Coder-7B-GGUF"]
    gated = HubClient().search_gguf("gated")
    assert gated[0].repo_id == "meta/Gated-GGUF" and gated[0].gated


def test_listing_groups_files_by_quantization_and_merges_split_parts(hub):
    listing = HubClient().list_gguf("acme/Coder-7B-GGUF")
    by_quant = {group.quant: group for group in listing.groups}
    assert list(by_quant) == ["Q4_K_M", "Q8_0", "BF16"]  # small quants first
    assert by_quant["Q4_K_M"].size == 3000
    split = by_quant["BF16"].models[0]
    assert split.is_split and split.complete
    assert [f.path for f in split.files] == [
        "Q8_0/Coder-7B-BF16-00001-of-00002.gguf",
        "Q8_0/Coder-7B-BF16-00002-of-00002.gguf",
    ]
    assert split.size == 6000
    assert split.name == "Coder-7B-BF16.gguf"
    # sha256 comes from the LFS metadata of the listing
    assert len(by_quant["Q8_0"].models[0].files[0].sha256) == 64
    assert listing.model_count == 3


def test_repo_without_gguf_files_says_so(hub):
    with pytest.raises(NotFoundError, match="no GGUF files"):
        HubClient().list_gguf("acme/Coder-7B")


def test_missing_repo_is_a_404_with_a_clear_message(hub):
    with pytest.raises(NotFoundError, match="No repository acme/Nope on the Hugging Face Hub") as info:
        HubClient().list_gguf("acme/Nope")
    assert info.value.may_be_private  # the Hub cannot tell missing from private: a token might help


def test_a_private_repo_needs_a_token(hub):
    hub.add_repo("me/Private-GGUF", {"p.gguf": payload(1000, 9)}, private=True)
    with pytest.raises(NotFoundError):
        HubClient().list_gguf("me/Private-GGUF")
    assert HubClient(token=GOOD_TOKEN).list_gguf("me/Private-GGUF").model_count == 1


def test_missing_file_names_it(hub):
    with pytest.raises(NotFoundError, match="no file nope.gguf"):
        HubClient().file_details("acme/Chat-1B-GGUF", ["nope.gguf"])


def test_gated_repo_lists_but_needs_a_token_to_download(hub):
    from app.hub.download import DownloadJob
    from app.hub.download_plan import DownloadItem

    listing = HubClient().list_gguf("meta/Gated-GGUF")  # like the Hub: a gated repo's file list is public
    assert listing.model_count == 1
    job = DownloadJob([DownloadItem("meta/Gated-GGUF", "gated-Q4_K_M.gguf")])
    with pytest.raises(GatedRepoError, match="gated.*token") as info:
        job.make_plan()
    assert info.value.repo_id == "meta/Gated-GGUF"
    assert not hub.gets()  # refused before any byte was requested


def test_saved_token_opens_a_gated_repo_and_is_kept_private(hub, tmp_path, caplog):
    caplog.set_level("DEBUG")
    assert hub_token.save_token(GOOD_TOKEN) == "specchat-tester"
    token_file = hub_token.environment.token_file()
    assert token_file.read_text() == GOOD_TOKEN
    assert (token_file.stat().st_mode & 0o777) == 0o600
    from app.hub.download import DownloadJob
    from app.hub.download_plan import DownloadItem

    [path] = DownloadJob([DownloadItem("meta/Gated-GGUF", "gated-Q4_K_M.gguf")], tmp_path).run()
    assert path.read_bytes() == hub.find_file("meta/Gated-GGUF", "gated-Q4_K_M.gguf").data
    assert GOOD_TOKEN not in caplog.text
    # The token was sent to the Hub, and not to the CDN the bytes came from.
    assert any(r.headers.get("authorization") == f"Bearer {GOOD_TOKEN}" for r in hub.requests if r.origin == "hub")
    assert all("authorization" not in r.headers for r in hub.requests if r.origin == "cdn")


def test_a_wrong_token_is_refused_and_not_saved(hub):
    with pytest.raises(InvalidTokenError, match="refused") as info:
        hub_token.save_token("hf_wrong")
    assert "hf_wrong" not in str(info.value)
    assert hub_token.get_token() is None


def test_token_from_environment_wins(hub, monkeypatch):
    hub_token.save_token(GOOD_TOKEN, validate=False)
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    assert hub_token.get_token() == "hf_from_env"
    assert hub_token.token_source() == "environment"
    monkeypatch.delenv("HF_TOKEN")
    hub_token.forget_token()
    assert hub_token.get_token() is None


def test_unreachable_hub_is_reported_quickly_as_offline(online, monkeypatch):
    # A port nothing listens on: the connection is refused at once, like a machine without network.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(OfflineError, match="Can't reach the Hugging Face Hub"):
        HubClient().search_gguf("qwen")


def test_offline_mode_is_reported_without_any_request(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="HF_HUB_OFFLINE"):
        HubClient("http://127.0.0.1:9").list_gguf("acme/x")


def test_hub_outage_is_a_clear_error(hub):
    hub.failures.hub_status = 503
    HubClient().check_reachable()
    with pytest.raises(HubUnavailableError, match="problem right now"):
        HubClient().file_details("acme/Chat-1B-GGUF", ["chat-1b-q4_k_m.gguf"])


@pytest.mark.parametrize(
    "name, quant",
    [
        ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "Q4_K_M"),
        ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
        ("gemma-3-270m-it-Q8_0.gguf", "Q8_0"),
        ("model-UD-Q4_K_XL-00001-of-00002.gguf", "UD-Q4_K_XL"),
        ("Q8_0/big-00001-of-00002.gguf", "Q8_0"),
        ("Llama-3.2-1B-Instruct-IQ3_XXS.gguf", "IQ3_XXS"),
        ("plain.gguf", ""),
    ],
)
def test_quantization_is_read_from_names(name, quant):
    assert quant_of(name) == quant


def test_incomplete_split_listing_is_flagged():
    [group] = group_gguf_files(
        [RemoteFile("m-Q4_0-00001-of-00003.gguf", 1), RemoteFile("m-Q4_0-00002-of-00003.gguf", 1)]
    )
    assert not group.models[0].complete
