#!/bin/bash
# Creates an audit template for GOAL and STRATEGY and a continuous audit of
# it with auto-trigger, the way the examples next to this file use it:
#
#   create-continuous-audit.sh GOAL STRATEGY [NAME=VALUE ...]
#
# NAME=VALUE are the strategy's audit parameters. From the environment:
# TEMPLATE (the template's name, required), AUDIT (the audit's name, default
# TEMPLATE), INTERVAL (seconds between audits, default 300) and SCOPE (an
# audit scope file, YAML; default none). Needs the openstack CLI with
# python-watcherclient and admin credentials in OS_*.
set -euo pipefail
if [ $# -lt 2 ] || [ -z "${TEMPLATE:-}" ]; then
    sed -n '2,11s/^# \{0,1\}//p' "$0" >&2
    exit 2
fi
goal=$1
strategy=$2
shift 2
AUDIT=${AUDIT:-$TEMPLATE}
INTERVAL=${INTERVAL:-300}
SCOPE=${SCOPE:-}

params=()
for p in "$@"; do
    params+=(--parameter "$p")
done

openstack optimize audittemplate create "$TEMPLATE" "$goal" \
    --strategy "$strategy" ${SCOPE:+--scope "$SCOPE"}
openstack optimize audit create --audit-template "$TEMPLATE" \
    --name "$AUDIT" --audit_type CONTINUOUS --interval "$INTERVAL" \
    --auto-trigger "${params[@]}"
