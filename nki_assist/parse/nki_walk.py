"""The NKI walker's base: byte positions and text of tree-sitter nodes, import-aware name resolution, and
the heads and arguments of calls. `nki_extract.Extractor` builds on it; fact collectors read it as `ex`."""

from __future__ import annotations

from .nki_facts.common import _Ctx, canonical_api, is_nki_api


class NkiWalker:
    """Positions, text and names over one source (`src`, `imports`, `module_env` set by the subclass)."""

    # ---- positions -------------------------------------------------------------------------
    def col(self, point) -> int:
        row, byte_col = point
        if row >= len(self._lines):
            return byte_col + 1
        line = self._lines[row]
        if line.isascii():
            return byte_col + 1
        return len(line[:byte_col].decode("utf-8", "replace")) + 1

    def pos(self, node) -> tuple[int, int, int, int]:
        s, e = node.start_point, node.end_point
        return s[0] + 1, self.col(s), e[0] + 1, self.col(e)

    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def _text_ascii(self, node) -> str:
        return self._str[node.start_byte:node.end_byte]

    @staticmethod
    def _pos_ascii(node) -> tuple[int, int, int, int]:
        s, e = node.start_point, node.end_point
        return s[0] + 1, s[1] + 1, e[0] + 1, e[1] + 1

    # ---- names -----------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        mod = self.imports.get(name)
        if mod is not None:
            return mod
        return {"nl": "nki.language", "nisa": "nki.isa"}.get(name)

    def api_of(self, dotted: str) -> str | None:
        try:
            return self._api_memo[dotted]
        except KeyError:
            api = self._api_memo[dotted] = self._api_of(dotted)
            return api

    def _api_of(self, dotted: str) -> str | None:
        head, _, rest = dotted.partition(".")
        mod = self.imports.get(head)
        if mod is None and head in ("nl", "nisa"):
            mod = self.resolve(head)
        if mod is None:
            return dotted if dotted in ("range", "min", "max") else None
        api = canonical_api(f"{mod}.{rest}" if rest else mod)
        return api if is_nki_api(api) else None

    def _kwarg_api(self, call, key: str, idx: int, ctx: _Ctx) -> str | None:
        args = call.child_by_field_name("arguments")
        if args is None:
            return None
        pos = []
        for c in args.named_children:
            if c.type == "keyword_argument":
                if self.text(c.child_by_field_name("name")) == key:
                    return self._op_name(c.child_by_field_name("value"))
            else:
                pos.append(c)
        return self._op_name(pos[idx]) if len(pos) > idx else None

    def _op_name(self, node) -> str | None:
        if node is None:
            return None
        d = self.folder.dotted(node)
        if d is None:
            return None
        return self.api_of(d) or d

    def _call_api(self, node) -> str | None:
        return self._call_head(node)[1]

    def _call_head(self, node) -> tuple[str | None, str | None]:
        """(dotted callee, normalised api) of a call node, computed once per node."""
        key = (node.start_byte, node.end_byte)
        head = self._head_memo.get(key)
        if head is None:
            fn = node.child_by_field_name("function")
            d = self.folder.dotted(fn) if fn is not None else None
            head = self._head_memo[key] = (d, self.api_of(d) if d else None)
        return head

    def _call_args(self, node) -> tuple[list, dict]:
        """(positional argument nodes incl. comments, {keyword: value node}) of a call, once per node."""
        key = (node.start_byte, node.end_byte)
        got = self._args_memo.get(key)
        if got is None:
            args = node.child_by_field_name("arguments")
            pos: list = []
            kw: dict = {}
            if args is not None:
                text = self.text
                for c in args.named_children:
                    if c.type == "keyword_argument":
                        value = kw[text(c.child_by_field_name("name"))] = c.child_by_field_name("value")
                        if value is not None:  # for nki_call: Node.parent searches from the root
                            self._kwarg_of[(value.start_byte, value.end_byte)] = c
                    else:
                        pos.append(c)
            got = self._args_memo[key] = (pos, kw)
        return got
