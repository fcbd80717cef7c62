#!/usr/bin/env python3
"""Compare the device-to-host copies of the same GPU-suite cases on the H200 and in the PTX simulator.

    tools/sim/compare_capture.py CHIP SIM [--report FILE.md] [--manifest FILE.tsv]

CHIP and SIM are files written by tests/gpu/capture.cpp (FLASHPTX_CAPTURE=FILE): on the H200 by
`FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE=chip.cap ./run_tests`, here by
`FLASHPTX_CAPTURE=sim.cap ./run_tests` (the simulator's child inherits it). Copies pair by
(suite, case, seq). Each pair is bit for bit the same, or differs; the buffers carry no type, so a
differing pair is read both as 32-bit and as 16-bit floats (the case's text says which it is), each
with the count of elements that differ, the largest absolute difference and the largest distance in
units in the last place among the elements not tiny next to the largest. --manifest writes what tests/gpu/capture.cpp checks in every
later simulator run (FLASHPTX_CHIP_MANIFEST; ./run_tests passes tools/sim/chip/h200-copies.tsv).
numpy only.
"""
import argparse, collections, sys
import numpy as np


def read_capture(path):
    """{(suite, case, seq): bytes}, and the order the cases came in."""
    out, order = {}, []
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        nl = data.index(b"\n", at)
        head = data[at:nl].decode()
        at = nl + 1
        fields = head.split("\t")
        word, seq, nbytes, _hash = fields[0].split(" ")
        assert word == "copy", head
        n = int(nbytes)
        key = (fields[1], fields[2], int(seq))
        out[key] = data[at:at + n]
        at += n
        if (fields[1], fields[2]) not in order:
            order.append((fields[1], fields[2]))
    return out, order


def fnv1a64(b):
    h = 0xcbf29ce484222325  # FNV-1a 64, as tools/support/bench.cpp
    for x in b:
        h ^= x
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def ordered_int(u, bits):
    """Sign-magnitude float bit patterns as integers in value order (for ULP distances)."""
    u = u.astype(np.int64)
    sign = 1 << (bits - 1)
    return np.where(u & sign, -(u & (sign - 1)), u)


def readings(a, b):
    """How a differing pair differs, read as 32-bit and as 16-bit floats: the width whose largest
    distance in units in the last place is smaller is the buffer's (a 16-bit buffer read as 32-bit
    shows its low halves' differences as huge ULPs, a 32-bit one read as 16-bit its low halves as
    garbage); bf16 and f16 differ by the same ULPs, so both of their absolute differences are given."""
    out = {}
    if len(a) % 4 == 0:
        x, y = (np.frombuffer(t, np.float32).astype(np.float64) for t in (a, b))
        out["f32"] = compare_values(x, y, np.frombuffer(a, np.uint32), np.frombuffer(b, np.uint32), 32)
    if len(a) % 2 == 0:
        ua, ub = np.frombuffer(a, np.uint16), np.frombuffer(b, np.uint16)
        with np.errstate(invalid="ignore"):
            xb = (ua.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
            yb = (ub.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        out["bf16"] = compare_values(xb, yb, ua, ub, 16)
        out["f16"] = compare_values(np.frombuffer(a, np.float16).astype(np.float64),
                                    np.frombuffer(b, np.float16).astype(np.float64), ua, ub, 16)
    return out


def describe(a, b):
    """(elements differing at 32 and at 16 bits, the f32 reading, the 16-bit reading) as text."""
    r = readings(a, b)
    f32 = ""
    if "f32" in r:
        rel, differ, mad, ulp, bad = r["f32"]
        f32 = "%d differ; largest %.3g (%.3g of the largest magnitude), %d ULP%s" % (
            differ, mad, rel, ulp, ", %d NaN/Inf against a finite value" % bad if bad else "")
    h16 = ""
    if "bf16" in r:
        _, differ, mad, ulp, bad = r["bf16"]
        h16 = "%d differ; largest %.3g as bf16, %.3g as f16, %d ULP" % (differ, mad, r["f16"][2], ulp)
    return f32, h16


def compare_values(x, y, ux, uy, bits):
    differ = ux != uy
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    nan_mismatch = int(np.count_nonzero(nan_x != nan_y))
    both = ~nan_x & ~nan_y & np.isfinite(x) & np.isfinite(y)
    scale = float(np.max(np.abs(x[both]))) if np.any(both) else 0.0
    mad = float(np.max(np.abs(x[both] - y[both]))) if np.any(both) else 0.0
    inf_mismatch = int(np.count_nonzero(np.isinf(x) != np.isinf(y)))
    # ULPs over the elements that are not tiny next to the largest (near zero a few ULPs of f32 are
    # millions of ULPs of a smaller value): the width of a buffer shows in these, not in the rest.
    big = both & (np.abs(x) >= 1e-3 * scale)
    ulp = int(np.max(np.abs(ordered_int(ux[big], bits) - ordered_int(uy[big], bits)))) if np.any(big) else 0
    rel = (mad / scale if scale > 0 else (0.0 if mad == 0 else np.inf))
    if nan_mismatch or inf_mismatch or not np.isfinite(rel):
        rel = np.inf
    return rel, int(np.count_nonzero(differ)), mad, ulp, nan_mismatch + inf_mismatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chip")
    ap.add_argument("sim")
    ap.add_argument("--report")
    ap.add_argument("--manifest")
    args = ap.parse_args()
    chip, order = read_capture(args.chip)
    sim, _ = read_capture(args.sim)
    by_case = collections.OrderedDict((c, []) for c in order)
    for key in sorted(chip, key=lambda k: (order.index(k[:2]), k[2])):
        by_case[key[:2]].append(key)
    lines, manifest = [], []
    totals = collections.Counter()
    for (suite, case), keys in by_case.items():
        rows = []
        for key in keys:
            a = chip[key]
            if key not in sim:
                rows.append("| %d | %d | not made in the simulator | | |" % (key[2], len(a)))
                totals["missing"] += 1
                continue
            b = sim[key]
            if len(a) != len(b):
                rows.append("| %d | %d | %d bytes in the simulator: not comparable | | |" % (key[2], len(a), len(b)))
                totals["size"] += 1
                continue
            same = a == b
            manifest.append("\t".join([suite, case, str(key[2]), str(len(a)), fnv1a64(a), "same" if same else "differs"]))
            if same:
                rows.append("| %d | %d | same bits | | |" % (key[2], len(a)))
                totals["same"] += 1
                continue
            totals["differs"] += 1
            f32, h16 = describe(a, b)
            rows.append("| %d | %d | differs | %s | %s |" % (key[2], len(a), f32, h16))
        n_same = sum(1 for r in rows if "same bits" in r)
        lines.append("### %s / %s\n\n%d copies, %d the same bit for bit\n" % (suite, case, len(rows), n_same))
        lines.append("| copy | bytes | result | read as 32-bit floats | read as 16-bit floats |")
        lines.append("|---|---|---|---|---|")
        lines.extend(rows)
        lines.append("")
    extra = [k for k in sim if k not in chip]
    summary = ("%d copies of %d cases compared: %d the same bit for bit, %d differ, %d not made in the simulator, "
               "%d of another size; %d made only in the simulator" % (
                   sum(totals.values()), len(by_case), totals["same"], totals["differs"], totals["missing"],
                   totals["size"], len(extra)))
    print(summary)
    if args.report:
        with open(args.report, "w") as f:
            f.write("# The PTX simulator against the H200, copy by copy\n\n" + summary + "\n\n" + "\n".join(lines))
    if args.manifest:
        with open(args.manifest, "w") as f:
            f.write("# suite\tcase\tseq\tbytes\tfnv1a64 of the H200's bytes\tsame|differs in the simulator "
                    "(tools/sim/compare_capture.py --manifest; checked by tests/gpu/capture.cpp)\n")
            f.write("\n".join(manifest) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
