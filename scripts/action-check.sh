#!/usr/bin/env bash
# The check step of action.yml: runs `rulelint check` on the given dumps, writes SARIF, and
# records the exit status for the action's last step, so that the SARIF is uploaded even when
# findings (exit 1) or unreadable inputs (exit 2) fail the run.
#
# Environment (set by action.yml from its inputs):
#   RULELINT_PATHS   dump files, folders or globs, separated by blanks (globs expand here)
#   RULELINT_SARIF   where to write the SARIF log
#   RULELINT_ARGS    further flags for `rulelint check` (`--fail-on warning`, `--baseline F`)
#   GITHUB_OUTPUT    the step's output file (`exit-code=N` is appended)
set -u
: "${RULELINT_PATHS:?set RULELINT_PATHS to the dumps to check}"
: "${RULELINT_SARIF:=rulelint.sarif}"
: "${RULELINT_ARGS:=}"
# A log left by an earlier run must not be uploaded as this run's.
rm -f "$RULELINT_SARIF"
# Word splitting and glob expansion of the two lists are wanted: `nodes/*.txt --fail-on info`.
# shellcheck disable=SC2086
rulelint check --format sarif --output-file "$RULELINT_SARIF" $RULELINT_ARGS $RULELINT_PATHS
status=$?
echo "exit-code=$status" >> "${GITHUB_OUTPUT:-/dev/null}"
if [ ! -s "$RULELINT_SARIF" ]; then
  echo "rulelint: no SARIF written (exit status $status)" >&2
  exit "$status"
fi
exit 0
