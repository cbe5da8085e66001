# Stage timing for .ci/run and .ci/sanitizers (sourced). Each stage prints
# its wall time beside its share of CI's budget, and says so loudly when it
# is past its share: the whole run must stay within 45 minutes on the
# slowest 2-core machine of CI's kind (issue 41), so a stage that grows is
# seen the day it grows, not the day CI's 90-minute limit is hit.
#
#   stage NAME SHARE_SECONDS COMMAND [ARG...]
#
# Stages are appended to $CI_STAGES_FILE (one "seconds share name" line
# each) so that .ci/run can print the table at the end.
: "${CI_STAGES_FILE:=${TMPDIR:-/tmp}/fracpack-ci-stages.$$}"
export CI_STAGES_FILE

stage() {
  local name="$1" share="$2"
  shift 2
  echo "==> stage: $name (share ${share} s)"
  local start rc=0
  start=$(date +%s)
  "$@" || rc=$?
  local took=$(($(date +%s) - start))
  echo "$took $share $name" >>"$CI_STAGES_FILE"
  if [ "$took" -gt "$share" ]; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!!! CI BUDGET: stage '$name' took ${took} s, past its share of ${share} s"
    echo "!!! (the whole run must stay within 45 minutes: see issue 41, .ci/run)"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  else
    echo "==> stage: $name took ${took} s (share ${share} s)"
  fi
  return "$rc"
}

# The table of every stage so far, and the total against the budget.
stage_summary() {
  local budget="${1:-2700}" total=0
  echo "==> CI stages (seconds, share):"
  while read -r took share name; do
    printf '    %6d  %6d  %s%s\n' "$took" "$share" "$name" "$([ "$took" -gt "$share" ] && echo '   <-- PAST ITS SHARE')"
    total=$((total + took))
  done <"$CI_STAGES_FILE"
  printf '    %6d  %6d  total\n' "$total" "$budget"
  if [ "$total" -gt "$budget" ]; then
    echo "!!! CI BUDGET: the run took ${total} s, past its budget of ${budget} s (45 minutes)"
  fi
}
