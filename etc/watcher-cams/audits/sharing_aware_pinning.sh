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
# Usage: sharing_aware_pinning.sh [NAME=VALUE ...]   (TEMPLATE,
# AUDIT, INTERVAL and SCOPE: see create-continuous-audit.sh)
set -euo pipefail
export TEMPLATE=${TEMPLATE:-cams-pinning}
export INTERVAL=${INTERVAL:-1800}  # sharing changes slowly; pinning is cheap
exec "$(dirname "$0")/create-continuous-audit.sh" \
    cpu_cache_affinity sharing_aware_pinning "$@"
