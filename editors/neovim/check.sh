#!/usr/bin/env bash
# Drive a real headless Neovim against the nki-assist language server and check that a diagnostic arrives.
#   editors/neovim/check.sh [NVIM]      (default: nvim on PATH; Debian 12: apt-get install -y neovim = 0.7.2)
# Uses the repository's .venv (make .venv/.installed) unless NKI_ASSIST_LSP_CMD is set. Exit 0: the
# expected diagnostic (NKI103, a PSUM tile wider than one bank) reached the buffer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
nvim="${1:-nvim}"
export NKI_ASSIST_LSP_CMD="${NKI_ASSIST_LSP_CMD:-$root/.venv/bin/python -m nki_assist lsp}"
export NKI_ASSIST_CHECK_RULE="${NKI_ASSIST_CHECK_RULE:-NKI103}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/proj" && touch "$work/proj/pyproject.toml"
cat > "$work/proj/wide_psum.py" <<'PY'
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def wide_psum(a, b):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
    nl.store(out, value=nl.copy(acc))
    return out
PY
export NKI_ASSIST_CHECK_FILE="$work/proj/wide_psum.py"
# -u NONE / --noplugin: no user config; 'filetype on' so the FileType autocommand fires
status=0
"$nvim" --headless -u NONE --noplugin -i NONE --cmd "filetype on" -c "luafile $here/check_headless.lua" || status=$?
echo  # headless Neovim's last message has no newline
exit "$status"
