import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))

FAKE_KEY = "sk-test-NKIASSIST-0123456789abcdefSECRET"


@pytest.fixture(autouse=True)
def _no_real_llm_env(monkeypatch):
    """Tests never see a real key or endpoint from the developer's environment."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NKI_ASSIST_MODEL", "NKI_ASSIST_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return FAKE_KEY
