"""YAML that people write (the config, site catalogues), read within fixed bounds."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

from bot.core.units import quote_value

MAX_FILE_BYTES = 1024 * 1024  # the packaged catalogue is 17 KB, a large config a few KB
MAX_DEPTH = 64
MAX_NODES = 20_000  # after alias expansion; the packaged catalogue has ~500


class YAMLBoundError(yaml.MarkedYAMLError):
    """The document is outside trainbot's bounds (depth, aliases, a number's length); the
    message says which and how to fix it."""


def decode_text(data: bytes, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a file's bytes; ValueError saying why they are not a text file.

    Read at most `max_bytes + 1` bytes of the file so that a huge file is refused unread.
    """
    if len(data) > max_bytes:
        raise ValueError(f"it is larger than {max_bytes // 1024} KiB, too big for a YAML file "
                         "people write; is it the right file?")
    if b"\0" in data:
        raise ValueError(f"it is not a text file (a NUL byte at offset {data.index(0)}); is it "
                         "the right file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x});"
                         " save it as UTF-8, or is it the wrong file?") from None


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """One line: where the YAML error is and what it is (`at line 3, column 5: …`)."""
    if isinstance(exc, yaml.reader.ReaderError):
        return (f"at character {exc.position + 1}: control character #x{exc.character:02x} "
                "is not allowed in YAML; remove it")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"at line {mark.line + 1}, column {mark.column + 1}" if mark else "in the file"
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        return f"{where}: {' '.join(what.split())}"
    return f"in the file: {' '.join(str(exc).split())}"


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader with MAX_DEPTH, MAX_NODES (aliases expanded) and no self-containing alias."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded: dict[int, int] = {}  # id(node) -> nodes it stands for, once composed
        self._total = 0  # nodes the document stands for so far, aliases expanded

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None and id(node) not in self._expanded:  # still being composed
                raise YAMLBoundError(None, None, f"alias *{event.anchor} refers to the node "
                                     "that contains it; a config cannot be recursive",
                                     event.start_mark)
            node = super().compose_node(parent, index)
            self._count(self._expanded[id(node)], node)
            return node
        self._count(1, None)
        if self._depth >= MAX_DEPTH:
            raise YAMLBoundError(None, None, f"nested deeper than {MAX_DEPTH} levels; is it "
                                 "the right file?", self.peek_event().start_mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        self._expanded[id(node)] = 1 + sum(self._expanded[id(c)] for c in children)
        return node

    def _count(self, nodes: int, alias_of: yaml.Node | None) -> None:
        self._total += nodes
        if self._total <= MAX_NODES:
            return
        mark = self.peek_event().start_mark if alias_of is None else alias_of.start_mark
        if alias_of is None:
            problem = (f"more than {MAX_NODES:,} values by here, far more than a config "
                       "needs; is it the right file?")
        else:
            problem = (f"aliases expand the document to more than {MAX_NODES:,} values by "
                       "here (an alias bomb?); write the values out or nest fewer aliases")
        raise YAMLBoundError(None, None, problem, mark)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(None, None, _unbuildable(node, exc), node.start_mark
                                   ) from None


def _unbuildable(node: yaml.Node, exc: Exception) -> str:
    text = str(node.value) if isinstance(node, yaml.ScalarNode) else node.tag
    if node.tag == "tag:yaml.org,2002:int":
        digits = sum(ch.isdigit() for ch in text)
        return f"a number of {digits} digits is not a value any setting takes"
    kind = node.tag.rsplit(":", 1)[-1]
    kind = "date" if kind == "timestamp" else kind
    return (f"{quote_value(text)} is not a valid {kind} ({exc}); put it in quotes if it is "
            "meant as text")


def load_yaml(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The document in `text`, read with `loader` (BoundedLoader or a subclass); raises
    yaml.YAMLError (describe it with describe_yaml_error)."""
    instance = loader(text)
    try:
        return instance.get_single_data()
    finally:
        instance.dispose()


__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "BoundedLoader",
    "YAMLBoundError",
    "decode_text",
    "describe_yaml_error",
    "load_yaml",
]
