#!/usr/bin/env python3
"""A flamegraph (SVG) from `perf script` output, with no dependency beyond Python 3.

    perf script -i paddock.perf | scripts/flamegraph.py --title "small GET, c=64" > get64.svg
    perf script -i paddock.perf | scripts/flamegraph.py --top 40 > /dev/null   # top list on stderr

Stacks are folded per sample (leaf last), Rust symbols trimmed of their hash and generic
arguments, and drawn as nested boxes whose width is the share of samples. `--top N` also
prints the N functions with the most samples anywhere on the stack ("total") and at the leaf
("self") to stderr: the figures docs/performance.md quotes.
"""

import argparse
import collections
import html
import re
import sys

HASH = re.compile(r"::h[0-9a-f]{16}$")
OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def trim(sym: str) -> str:
    sym = HASH.sub("", OFFSET.sub("", sym.strip()))
    # Drop generic arguments (nested <...>) to keep names readable.
    out, depth = [], 0
    for ch in sym:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<…>")
            continue
        if ch == ">" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(ch)
    s = "".join(out)
    return s.replace("<…><…>", "<…>") or "?"


def folded(lines):
    """Yields (stack tuple root-first, 1) per sample of `perf script` text."""
    stack, in_sample = [], False
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if in_sample and stack:
                yield tuple(reversed(stack))
            stack, in_sample = [], False
            continue
        if not line.startswith((" ", "\t")):
            in_sample, stack = True, []
            continue
        parts = line.strip().split(" ", 1)
        if len(parts) == 2:
            sym = parts[1].rsplit(" (", 1)[0]
            if sym.startswith("[unknown]"):
                sym = "[unknown]"
            stack.append(trim(sym))
    if in_sample and stack:
        yield tuple(reversed(stack))


def svg(counts, title, width=1400, row=16, min_frac=0.001):
    total = sum(counts.values())
    tree = {}
    for stack, n in counts.items():
        node = tree
        for fn in stack:
            node = node.setdefault(fn, [0, {}])
            node[0] += n
            node = node[1]
    boxes, depth_max = [], 0

    def walk(node, x, depth):
        nonlocal depth_max
        for fn, (n, kids) in sorted(node.items()):
            w = n / total
            if w >= min_frac:
                boxes.append((x, depth, w, fn, n))
                depth_max = max(depth_max, depth)
                walk(kids, x, depth + 1)
            x += w

    walk(tree, 0.0, 0)
    height = (depth_max + 3) * row
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">',
        f'<text x="4" y="{row - 3}">{html.escape(title)} ({total} samples; hover for names)</text>',
    ]
    for x, depth, w, fn, n in boxes:
        px, pw = x * width, max(w * width - 0.5, 0.1)
        py = height - (depth + 1) * row
        hue = 20 + (hash(fn) % 40)
        label = html.escape(fn)
        tip = f"{label} ({n} samples, {100 * n / total:.1f} %)"
        out.append(
            f'<g><title>{tip}</title><rect x="{px:.1f}" y="{py}" width="{pw:.1f}" height="{row - 1}" fill="hsl({hue},85%,60%)"/>'
        )
        chars = int(pw / 7)
        if chars > 3:
            text = fn if len(fn) <= chars else fn[: chars - 1] + "…"
            out.append(f'<text x="{px + 2:.1f}" y="{py + row - 4}">{html.escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="flamegraph")
    ap.add_argument("--top", type=int, default=0)
    a = ap.parse_args()
    counts = collections.Counter(folded(sys.stdin))
    if not counts:
        sys.exit("no samples in the input (is it `perf script` output?)")
    sys.stdout.write(svg(counts, a.title))
    if a.top:
        total = sum(counts.values())
        incl, leaf = collections.Counter(), collections.Counter()
        for stack, n in counts.items():
            for fn in set(stack):
                incl[fn] += n
            leaf[stack[-1]] += n
        print(f"{total} samples", file=sys.stderr)
        print("-- total (anywhere on the stack)", file=sys.stderr)
        for fn, n in incl.most_common(a.top):
            print(f"{100 * n / total:6.1f} %  {fn}", file=sys.stderr)
        print("-- self (leaf)", file=sys.stderr)
        for fn, n in leaf.most_common(a.top):
            print(f"{100 * n / total:6.1f} %  {fn}", file=sys.stderr)


if __name__ == "__main__":
    main()
