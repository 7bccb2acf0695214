"""Renders a bench.py --json file as the Markdown table benchmarks/RESULTS.md keeps.

    python benchmarks/report.py bench.json
"""
import json
import sys


def rate(row, seconds):
    """GB/s for memory-bound rows, TFLOP/s for products, else ''."""
    if row.get("bytes"):
        return f"{row['bytes'] / seconds / 1e9:.1f} GB/s"
    if row.get("flops"):
        return f"{row['flops'] / seconds / 1e12:.2f} TFLOP/s"
    return ""


def main():
    with open(sys.argv[1]) as f:
        run = json.load(f)
    print(f"{run['device']} ({run['driver']}); peer: {run['peer']}\n")
    print("| op | shape | vkt | peer | ratio (peer / vkt) | vkt rate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in run["rows"]:
        v, p = row["vkt"], row.get("peer")
        peer = f"{p * 1e3:.4g} ms" if p else "-"
        ratio = f"**{p / v:.2f}**" if p else "-"
        print(f"| {row['op']} | {row['shape']} | {v * 1e3:.4g} ms | {peer} | {ratio} | {rate(row, v)} |")


if __name__ == "__main__":
    main()
