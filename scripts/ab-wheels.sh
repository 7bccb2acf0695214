# A/B of two wheels on the device: base (.whl/base) and new (.whl), same machine, same call, two rounds.
# Usage: bash scripts/ab-wheels.sh SCRIPT [ARGS...]  (run after sourcing .gl/on-device.sh)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_base .whl/base/*.whl
for round in 1 2; do
  echo "== base, round $round"; PYTHONPATH=/tmp/site_base python3 "$@"
  echo "== new, round $round"; python3 "$@"
done
