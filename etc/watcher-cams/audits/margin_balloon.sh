#!/bin/bash
# margin_balloon (goal memory_cache_efficiency): sizes each guest at what it
# commits (Committed_AS) plus a margin that the Balloon Controller paper's
# two-state controller learns from the guest's page cache.
#
# Parameters (openstack optimize audit create --parameter NAME=VALUE), with
# their defaults:
#   up_mb=25               MiB added per consecutive UP step
#   down_mb=50             MiB removed per consecutive DOWN step
#   max_step_mb=200        largest margin change per cycle (MiB)
#   min_margin_mb=100      smallest margin (MiB)
#   initial_margin_mb=100  margin of a guest seen first (MiB)
#   change_mb=0            cache changes above this count as changed
#
# Usage: margin_balloon.sh [NAME=VALUE ...]   (admin credentials in OS_*;
# TEMPLATE, AUDIT, INTERVAL and SCOPE from the environment)
set -euo pipefail
TEMPLATE=${TEMPLATE:-cams-margin}
AUDIT=${AUDIT:-$TEMPLATE}       # the continuous audit's name
INTERVAL=${INTERVAL:-60}        # the paper's controller runs often
SCOPE=${SCOPE:-}                # optional audit scope (YAML file)

params=()
for p in "$@"; do
    params+=(--parameter "$p")
done

openstack optimize audittemplate create "$TEMPLATE" memory_cache_efficiency \
    --strategy margin_balloon ${SCOPE:+--scope "$SCOPE"}
openstack optimize audit create --audit-template "$TEMPLATE" \
    --name "$AUDIT" --audit_type CONTINUOUS --interval "$INTERVAL" \
    --auto-trigger \
    "${params[@]}"
