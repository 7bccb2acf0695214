#!/usr/bin/env bash
# The suite as six concurrent pytest processes (each a sixth of the test files, test_allocator.py alone
# after them, as it measures the device's memory), with the validation layer on: on the GPU machine one
# process takes past the 600 s a device call may run. Logs go to $OUT/suite{0..5}.txt, one line a test (-v), so a
# process stopped at the limit names the test it was in: its last line.
# Usage there: source .gl/on-device.sh && bash scripts/suite-split.sh
set -u
out=${OUT:-/tmp}
rm -f /tmp/part[0-5]
i=0
for f in $(ls tests/test_*.py | grep -v test_allocator); do echo "$f" >> /tmp/part$((i % 6)); i=$((i + 1)); done
for k in 0 1 2 3 4 5; do
  VKT_VALIDATION=1 timeout -k 20 -s INT 450 python3 -m pytest -v -p no:cacheprovider $(cat /tmp/part$k) > "$out/suite$k.txt" 2>&1 &
done
wait
for k in 0 1 2 3 4 5; do tail -1 "$out/suite$k.txt" | cut -c1-250; grep "^FAILED\|^ERROR" "$out/suite$k.txt" | cut -c1-250; done
VKT_VALIDATION=1 timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_allocator.py 2>&1 | tail -1
