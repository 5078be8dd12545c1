import pytest


@pytest.fixture(scope="session")
def reviewed_ports(tmp_path_factory):
    """{spec: ReviewedPort} for every example, eval case and fixture port, reviewed once per session."""
    from reviewed_ports import review_all

    return review_all(tmp_path_factory.getbasetemp() / "reviewed_ports.json")
