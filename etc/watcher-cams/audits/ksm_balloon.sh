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
#
# Usage: ksm_balloon.sh [NAME=VALUE ...]   (admin credentials in OS_*;
# TEMPLATE, AUDIT, INTERVAL and SCOPE from the environment)
set -euo pipefail
TEMPLATE=${TEMPLATE:-cams-ksm}
AUDIT=${AUDIT:-$TEMPLATE}       # the continuous audit's name
INTERVAL=${INTERVAL:-600}       # KSM merges slowly
SCOPE=${SCOPE:-}                # optional audit scope (YAML file)

params=()
for p in "$@"; do
    params+=(--parameter "$p")
done

openstack optimize audittemplate create "$TEMPLATE" memory_cache_efficiency \
    --strategy ksm_balloon ${SCOPE:+--scope "$SCOPE"}
openstack optimize audit create --audit-template "$TEMPLATE" \
    --name "$AUDIT" --audit_type CONTINUOUS --interval "$INTERVAL" \
    --auto-trigger \
    "${params[@]}"
