#!/usr/bin/env bash
# The steps of action.yml: install spec-verify, build the port, run `spec-verify check --impl
# ffi:LIBRARY --junit FILE --markdown SUMMARY`, append the summary to $GITHUB_STEP_SUMMARY and
# exit with check's exit code (a failed build: its own code, and the summary says so).
#
# Environment (action.yml maps its inputs here): SV_LIBRARY (required), SV_BUILD, SV_PROFILE
# (conformance), SV_ARGS (split on whitespace), SV_JUNIT (spec-verify-junit.xml), SV_WORKDIR
# (.), SV_INSTALL (a pip requirement installed into a fresh venv; empty: use SPEC_VERIFY, the
# spec-verify command, default the one on the PATH).
set -euo pipefail

summary_file=${GITHUB_STEP_SUMMARY:-/dev/null}
say_summary() { printf '%s\n' "$@" >> "$summary_file"; }
fail() {  # a usage error of the action: one line, exit 2, and the job summary says it too
    echo "spec-verify action: $1" >&2
    say_summary "## ⚠️ spec-verify: $1"
    exit 2
}

[ -n "${SV_LIBRARY:-}" ] || fail "the 'library' input is empty: give the path of the port's shared library (e.g. target/release/libmy_port.so)"
cd "${SV_WORKDIR:-.}" || fail "working-directory '${SV_WORKDIR}' does not exist"

spec_verify=${SPEC_VERIFY:-spec-verify}
if [ -n "${SV_INSTALL:-}" ]; then
    venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/spec-verify-venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "$SV_INSTALL"
    spec_verify="$venv/bin/spec-verify"
fi

if [ -n "${SV_BUILD:-}" ]; then
    echo "spec-verify action: building the port: $SV_BUILD" >&2
    set +e
    bash -euo pipefail -c "$SV_BUILD"
    built=$?
    set -e
    if [ "$built" -ne 0 ]; then
        echo "spec-verify action: the build command failed (exit $built)" >&2
        say_summary "## ❌ spec-verify: the port did not build (exit $built); nothing was checked"
        exit "$built"
    fi
fi
[ -f "$SV_LIBRARY" ] || fail "library '$SV_LIBRARY' is not a file after the build (in $(pwd)): check the 'library' input"

markdown=$(mktemp)
trap 'rm -f "$markdown"' EXIT
read -ra extra <<< "${SV_ARGS:-}"
set +e
"$spec_verify" check --impl "ffi:$SV_LIBRARY" --profile "${SV_PROFILE:-conformance}" \
    --junit "${SV_JUNIT:-spec-verify-junit.xml}" --markdown "$markdown" --no-progress "${extra[@]}"
code=$?
set -e
if [ -s "$markdown" ]; then
    cat "$markdown" >> "$summary_file"
else  # argparse refused the arguments before any report was written
    say_summary "## ⚠️ spec-verify check exited $code without a report (see the log: a usage error in the 'args' or 'profile' input?)"
fi
echo "exit-code=$code" >> "${GITHUB_OUTPUT:-/dev/null}"
exit "$code"
