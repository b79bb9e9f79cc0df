"""Fail when a module of ``dcode`` imports, directly or through others, a module that imports it.

``lint-imports`` checks the layering between packages; this checks that no two modules anywhere
in the package need each other. Every import counts, as in ``lint-imports``: those at the top,
those in functions, and those made only for the type checker (a ``TYPE_CHECKING`` import still
ties the two modules together for whoever reads or changes them).

    python scripts/check_import_cycles.py            # dcode
    python scripts/check_import_cycles.py mypackage  # another importable package

Each cycle is printed as its modules, with the imports between them that close it; the exit
status is 1 when there is one. A cycle listed in ``EXCEPTIONS`` (for ``dcode`` only) is
allowed while it is exactly that cycle; an exception that no longer matches one fails too, so
that it is removed once the cycle is gone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping

import grimp

# A cycle allowed for now, with the reason; none today.
EXCEPTIONS: Mapping[frozenset[str], str] = {}


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import graph's strongly connected components of two modules or more (Tarjan's,
    iterative so that a deep chain of imports cannot exhaust the stack), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []  # the modules being visited, deepest last

    def enter(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        work.append((module, iter(sorted(graph.find_modules_directly_imported_by(module)))))

    for root in sorted(graph.modules):
        if root in index:
            continue
        enter(root)
        while work:
            module, imported = work[-1]
            for other in imported:
                if other not in index:
                    enter(other)
                    break
                if other in on_stack:
                    low[module] = min(low[module], index[other])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = _pop_component(stack, on_stack, module)
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _pop_component(stack: list[str], on_stack: set[str], head: str) -> list[str]:
    component = []
    while True:
        module = stack.pop()
        on_stack.discard(module)
        component.append(module)
        if module == head:
            return component


def describe(graph: grimp.ImportGraph, component: list[str]) -> list[str]:
    """The imports inside ``component``, one line each: where each is and what it says."""
    lines = []
    for importer in component:
        for imported in component:
            if importer == imported:
                continue
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(
                    f"  {importer}:{detail['line_number']}: {detail['line_contents'].strip()}"
                )
    return lines


def problems(package: str, exceptions: Mapping[frozenset[str], str] = EXCEPTIONS) -> list[str]:
    """What is wrong with ``package``'s imports: each cycle not excepted, with its imports, and
    each exception that matches no cycle any more. Empty when all is well."""
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    found = cycles(graph)
    out = []
    for component in found:
        if frozenset(component) in exceptions:
            continue
        out.append(f"import cycle between {', '.join(component)}:")
        out.extend(describe(graph, component))
    for excepted, reason in exceptions.items():
        if sorted(excepted) not in found and _in_package(excepted, package):
            names = ", ".join(sorted(excepted))
            out.append(f"no cycle between {names} any more ({reason}): remove its exception")
    return out


def _in_package(modules: frozenset[str], package: str) -> bool:
    return all(m == package or m.startswith(package + ".") for m in modules)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="dcode")
    args = parser.parse_args(argv)
    found = problems(args.package)
    for line in found:
        print(line)
    if found:
        return 1
    print(f"no import cycles in {args.package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
