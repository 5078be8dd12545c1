import pytest


@pytest.fixture(scope="session")
def reviewed_ports(tmp_path_factory):
    """{spec: ReviewedPort} for every example, eval case and fixture port, reviewed once per session."""
    from reviewed_ports import review_all

    return review_all(tmp_path_factory.getbasetemp() / "reviewed_ports.json")


@pytest.fixture(autouse=True)
def _own_check_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own `check` cache folder: a test that fakes or patches rules must never be
    answered from (or leave) another test's cached findings."""
    monkeypatch.setenv("NKI_ASSIST_CACHE_DIR", str(tmp_path_factory.mktemp("check_cache")))


@pytest.fixture(params=["fresh", "warm"])
def sandbox_start(request):
    """Run the test's sandboxed runs both ways: a fresh process per run, and forked from the warm
    zygote (toolchain/zygote.py) that reviews and evals use. Opt in with
    `pytestmark = pytest.mark.usefixtures("sandbox_start")`."""
    if request.param == "fresh":
        yield "fresh"
        return
    from nki_assist.toolchain.sandbox import warm_sandbox

    with warm_sandbox():
        yield "warm"
