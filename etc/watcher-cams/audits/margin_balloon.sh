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
#   host_reserved_mb=0     MiB of each host never promised to guests, where
#                          more than Nova and the agent reserve
#
# Usage: margin_balloon.sh [NAME=VALUE ...]   (TEMPLATE,
# AUDIT, INTERVAL and SCOPE: see create-continuous-audit.sh)
set -euo pipefail
export TEMPLATE=${TEMPLATE:-cams-margin}
export INTERVAL=${INTERVAL:-60}  # the paper's controller runs often
exec "$(dirname "$0")/create-continuous-audit.sh" \
    memory_cache_efficiency margin_balloon "$@"
