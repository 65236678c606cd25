"""No module of fgl reaches into another's private parts.

A name with a leading underscore is its module's (or class's) own: no
``from fgl.x import _name``, and no ``obj._name`` where ``obj`` is not the
method's own ``self``/``cls`` or a class of the same module.  What one
module needs of another is a public name, documented where it is defined.

Read with ``ast``.  Out of scope: dunders, the ``NamedTuple`` API
(``_replace``, ``_fields``, ...) and the private names of modules outside
fgl (``np._x``, ``argparse._SubParsersAction``).  Every hit is reported as
``path:line name``.
"""
from __future__ import annotations

import ast
from pathlib import Path

FGL = Path(__file__).resolve().parents[2] / "fgl"

# the NamedTuple API: public despite the underscore
NAMEDTUPLE_API = {"_replace", "_fields", "_asdict", "_make", "_field_defaults"}
# (path relative to the repository, attribute): unavoidable, with the reason
ALLOWED = {
    # where numba keeps a kernel's cache index: numba's own internals, no public name
    ("fgl/engines/first_run.py", "_cache"),
    ("fgl/engines/first_run.py", "_cache_file"),
    ("fgl/engines/first_run.py", "_index_path"),
    # a stale cache index read as empty: numba's loader, no public hook
    ("fgl/jit.py", "_load_index"),
    # cached code files named per process while two compile into one cache: numba's namer
    ("fgl/jit.py", "_data_name"),
    # whether a codec is for text: the standard library's codecs keep it private
    ("fgl/cli/options.py", "_is_text_encoding"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _foreign_modules(tree: ast.Module) -> set[str]:
    """Names bound to modules outside fgl (``import numpy as np``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "fgl":
                    out.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] != "fgl":
            out.update(alias.asname or alias.name for alias in node.names)
    return out


class _Scan(ast.NodeVisitor):
    """The private names one module takes from others."""

    def __init__(self, path: str, tree: ast.Module):
        self.path, self.hits = path, []
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        self.foreign = _foreign_modules(tree)
        self.own: list[set[str]] = []    # per enclosing function, its own self/cls
        self.in_class = [False]

    def hit(self, node: ast.AST, name: str) -> None:
        self.hits.append(f"{self.path}:{node.lineno} {name}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.in_class.append(True)
        self.generic_visit(node)
        self.in_class.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args.posonlyargs + node.args.args
        method = self.in_class[-1] and args and args[0].arg in ("self", "cls")
        self.own.append({args[0].arg} if method else set())
        self.in_class.append(False)
        self.generic_visit(node)
        self.in_class.pop()
        self.own.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or (node.module or "").split(".")[0] == "fgl":
            for part in (node.module or "").split("."):
                if _private(part):
                    self.hit(node, node.module)
            for alias in node.names:
                if _private(alias.name):
                    self.hit(node, alias.name)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == "fgl" and any(map(_private, alias.name.split("."))):
                self.hit(node, alias.name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        if not _private(node.attr) or node.attr in NAMEDTUPLE_API:
            return
        if (self.path, node.attr) not in ALLOWED and not self.owned(node.value):
            self.hit(node, ast.unparse(node))

    def owned(self, base: ast.expr) -> bool:
        """Whether ``base`` is this module's: the method's own self/cls, a
        class of the module, ``super()``, or a module outside fgl."""
        if isinstance(base, ast.Name):
            return any(base.id in own for own in self.own) or base.id in self.classes \
                or base.id in self.foreign
        return isinstance(base, ast.Call) and isinstance(base.func, ast.Name) \
            and base.func.id == "super"

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                and (self.path, node.args[1].value) not in ALLOWED \
                and not self.owned(node.args[0]):
            self.hit(node, f"{node.func.id}(..., {node.args[1].value!r})")


def private_names_used(root: Path = FGL) -> list[str]:
    """Every private name a module of ``root`` takes from another, as
    ``path:line name``."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        scan = _Scan(path.relative_to(root.parent).as_posix(),
                     tree := ast.parse(path.read_text(encoding="utf-8")))
        scan.visit(tree)
        hits += scan.hits
    return hits


def test_no_private_name_is_used_across_modules():
    hits = private_names_used()
    assert not hits, "private names used outside their module or class:\n" + "\n".join(hits)


def test_the_scan_finds_what_it_forbids(tmp_path):
    pkg = tmp_path / "fgl"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "import numpy as np\n"
        "from fgl.b import _hidden, shown\n"
        "class A:\n"
        "    def f(self, other):\n"
        "        self._x, A._y, np._z = 1, 2, 3\n"
        "        return other._w + shown._v\n"
        "def g(cls):\n"
        "    return cls._q, getattr(cls, '_r')\n", encoding="utf-8")
    assert private_names_used(pkg) == [
        "fgl/a.py:2 _hidden", "fgl/a.py:6 other._w", "fgl/a.py:6 shown._v", "fgl/a.py:8 cls._q",
        "fgl/a.py:8 getattr(..., '_r')"]
