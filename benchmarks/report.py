"""Renders a bench.py --json file as the Markdown table benchmarks/RESULTS.md keeps.

    python benchmarks/report.py bench.json
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        run = json.load(f)
    print(f"{run['device']} ({run['driver']}); peer: {run['peer']}\n")
    print("| op | shape | vkt | peer | ratio (peer / vkt) | vkt rate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in run["rows"]:
        v, p = row["vkt"], row.get("peer")
        rate = ""
        if row.get("bytes"):
            rate = f"{row['bytes'] / v / 1e9:.0f} GB/s"
        elif row.get("flops"):
            rate = f"{row['flops'] / v / 1e12:.1f} TFLOP/s"
        peer = f"{p * 1e3:.4g} ms" if p else "-"
        ratio = f"**{p / v:.2f}**" if p else "-"
        print(f"| {row['op']} | {row['shape']} | {v * 1e3:.4g} ms | {peer} | {ratio} | {rate} |")


if __name__ == "__main__":
    main()
