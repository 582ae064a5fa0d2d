#!/bin/bash
# ksm_balloon (goal memory_cache_efficiency): hands the memory KSM saved on a
# node back to its guests with the balloon. mode=paper shares it equally,
# as the paper does; mode=utility gives it where it saves the most disk
# reads.
#
# Parameters (openstack optimize audit create --parameter NAME=VALUE), with
# their defaults:
#   mode=paper        paper or utility
#   granule_mb=64     utility: unit of memory handed out (MiB)
#   min_value=0.05    utility: least disk reads saved (MiB/s per GiB) worth
#                     giving memory
#   host_reserved_mb=0  MiB of each host never promised to guests, where
#                     more than Nova and the agent reserve
#
# Usage: ksm_balloon.sh [NAME=VALUE ...]   (TEMPLATE,
# AUDIT, INTERVAL and SCOPE: see create-continuous-audit.sh)
set -euo pipefail
export TEMPLATE=${TEMPLATE:-cams-ksm}
export INTERVAL=${INTERVAL:-600}  # KSM merges slowly
exec "$(dirname "$0")/create-continuous-audit.sh" \
    memory_cache_efficiency ksm_balloon "$@"
