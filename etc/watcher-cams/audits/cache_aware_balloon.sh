#!/bin/bash
# cache_aware_balloon (goal memory_cache_efficiency): moves memory with the
# balloon from guests whose page cache does not pay off to guests where it
# does. mode=paper is the CAMS paper's method (equal cache utilization by
# fixed steps), mode=utility ours (equal marginal value of memory, measured
# through the guests' refault counters). doc/source/strategies.rst says how
# each decides.
#
# Parameters (openstack optimize audit create --parameter NAME=VALUE), with
# their defaults:
#   mode=utility        paper or utility
#   pages_per_step=64   paper: pages per step
#   page_mb=2           paper: MiB per page
#   max_steps=4         paper: steps per audit cycle
#   tolerance=0.05      paper: utilizations this close count as equal
#   granule_mb=64       utility: unit of memory moved (MiB)
#   min_value=0.1       utility: least disk reads saved (MiB/s per GiB of
#                       memory moved) worth a move
#   value_band=0.2      utility: share by which the gain must beat the loss
#   psi_protect=10.0    utility: guests with memory PSI some avg10 at or
#                       above this never give memory
#   memory_s=1800.0     utility: seconds a measured value at a size is kept
#   settle_s=60.0       utility: seconds a resize echoes in the counters
#   lfu_hit_ratio=0.5   double caching: instances whose host-cached disk
#                       serves less than this share of their reads from
#                       the host cache count in lfu_candidates
#   recommend_lfu=False  double caching: a nop action naming each candidate
#                       (doc/source/lfu.rst)
#
# Usage: cache_aware_balloon.sh [NAME=VALUE ...]   (TEMPLATE,
# AUDIT, INTERVAL and SCOPE: see create-continuous-audit.sh)
set -euo pipefail
export TEMPLATE=${TEMPLATE:-cams-cache-aware}
export INTERVAL=${INTERVAL:-300}  # seconds between audits
exec "$(dirname "$0")/create-continuous-audit.sh" \
    memory_cache_efficiency cache_aware_balloon "$@"
