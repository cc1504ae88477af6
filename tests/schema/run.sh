#!/bin/sh
# rules/schema.json: every shipped rule file validates against it; each
# tests/schema/bad-*.yaml is rejected by the schema AND by rulec.
set -u
. "$(dirname "$0")/../lib.sh"
rulec=$1
py=${PYTHON:-python3}
if [ "${HAVE_PYSCHEMA:-0}" != 1 ] && ! "$py" -c 'import yaml, jsonschema' 2>/dev/null; then
	skip "schema/*" "python3-jsonschema not installed"
	exit 0
fi
validate() {
	"$py" - "$1" <<'PY'
import json, sys, yaml, jsonschema
schema = json.load(open("rules/schema.json"))
jsonschema.Draft7Validator.check_schema(schema)
doc = yaml.safe_load(open(sys.argv[1]))
errs = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
for e in errs:
    print("%s: %s at %s" % (sys.argv[1], e.message, "/".join(map(str, e.path))))
sys.exit(3 if errs else 0)
PY
}
# validate exits 0 (valid) or 3 (rejected); anything else is the validator
# failing (a crash, a bad schema), which must not pass for a rejection
for f in rules/*.yaml examples/*.yaml tests/check/alias-ok.yaml; do
	if out=$(validate "$f" 2>&1); then pass "schema/valid $f"; else fail "schema/valid $f" "$out"; fi
done
# rulec, asked only about what the schema rejects, rejects with exit 1 (its
# errors); 0 accepts, 2 is usage or I/O, anything else a crash
for f in tests/schema/bad-*.yaml; do
	out=$(validate "$f" 2>&1)
	rc=$?
	rrc=1
	[ $rc -eq 3 ] && { "$rulec" --check -q "$f" >/dev/null 2>&1; rrc=$?; }
	if [ $rc -eq 0 ]; then
		fail "schema/rejects $f" "the schema accepted it"
	elif [ $rc -ne 3 ]; then
		fail "schema/rejects $f" "the validator failed (exit $rc): $out"
	elif [ $rrc -eq 0 ]; then
		fail "schema/rejects $f" "the schema rejects it but rulec accepts it"
	elif [ $rrc -ne 1 ]; then
		fail "schema/rejects $f" "rulec --check exited $rrc, not 1 (its errors)"
	else
		pass "schema/rejects $f"
	fi
done
