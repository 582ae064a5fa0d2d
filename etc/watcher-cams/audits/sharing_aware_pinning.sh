#!/bin/bash
# sharing_aware_pinning (goal cpu_cache_affinity): pins the vCPUs of guests
# that share many KSM-merged pages to the CPUs of one last-level cache.
#
# Parameters (openstack optimize audit create --parameter NAME=VALUE), with
# their defaults:
#   cpu_allocation_ratio=null  vCPUs per shared host CPU on one LLC (null:
#                              the node's Nova ratio)
#   exact_limit=8              hosts with at most this many movable guests
#                              are solved exactly
#
# Usage: sharing_aware_pinning.sh [NAME=VALUE ...]   (admin credentials in
# OS_*; TEMPLATE, AUDIT, INTERVAL and SCOPE from the environment)
set -euo pipefail
TEMPLATE=${TEMPLATE:-cams-pinning}
AUDIT=${AUDIT:-$TEMPLATE}       # the continuous audit's name
INTERVAL=${INTERVAL:-1800}      # sharing changes slowly; pinning is cheap
SCOPE=${SCOPE:-}                # optional audit scope (YAML file)

params=()
for p in "$@"; do
    params+=(--parameter "$p")
done

openstack optimize audittemplate create "$TEMPLATE" cpu_cache_affinity \
    --strategy sharing_aware_pinning ${SCOPE:+--scope "$SCOPE"}
openstack optimize audit create --audit-template "$TEMPLATE" \
    --name "$AUDIT" --audit_type CONTINUOUS --interval "$INTERVAL" \
    --auto-trigger \
    "${params[@]}"
