#!/bin/bash
# watcher-cams DevStack plugin: installs the package, configures Watcher for
# its strategies and actions, runs watcher-cams-agent on compute nodes and
# watcher-cams-api beside Watcher's API, enables the Horizon panel,
# optionally switches nova-compute to the driver extension, and marks guest
# images for the QEMU guest agent. See devstack/README.rst.
#
# Every setting comes from watcher_cams.deploy (python -m
# watcher_cams.deploy), the module the all-in-one harness (tools/aio) uses
# too, so the two write the same configuration.

_XTRACE_WATCHER_CAMS=$(set +o | grep xtrace)
set +o xtrace

function _watcher_cams_deploy {
    "$PYTHON" -m watcher_cams.deploy "$@"
}

# install_watcher_cams - the package, with the agent's and the driver's
# extras where they run
function install_watcher_cams {
    local extras=""
    if is_service_enabled watcher-cams-agent; then
        extras="agent"
    fi
    if [[ "$WATCHER_CAMS_NOVA_DRIVER" == "True" ]] && \
            is_service_enabled n-cpu; then
        extras="${extras:+$extras,}nova"
    fi
    if _watcher_cams_dashboard_enabled; then
        extras="${extras:+$extras,}dashboard"
    fi
    setup_develop "$WATCHER_CAMS_DIR" ${extras:+"$extras"}
}

function _watcher_cams_dashboard_enabled {
    [[ "$WATCHER_CAMS_DASHBOARD" == "True" ]] && is_service_enabled horizon
}

# configure_watcher_cams_api - its service user and catalog entry, its
# config file and its uwsgi file
function configure_watcher_cams_api {
    sudo install -d -o "$STACK_USER" "$WATCHER_CAMS_CONF_DIR"
    create_service_user watcher-cams admin
    get_or_create_service watcher-cams memory-optimization \
        "watcher-cams reports API"
    get_or_create_endpoint memory-optimization "$REGION_NAME" \
        "$SERVICE_PROTOCOL://$SERVICE_HOST/memory-optimization"
    iniset "$WATCHER_CAMS_API_CONF" DEFAULT transport_url \
        "$(get_transport_url)"
    configure_keystone_authtoken_middleware "$WATCHER_CAMS_API_CONF" \
        watcher-cams
    write_uwsgi_config "$WATCHER_CAMS_API_UWSGI_CONF" \
        "$WATCHER_CAMS_API_UWSGI" /memory-optimization "" watcher-cams-api
    iniset "$WATCHER_CAMS_API_UWSGI_CONF" uwsgi env \
        "WATCHER_CAMS_API_CONFIG=$WATCHER_CAMS_API_CONF"
}

# configure_watcher_cams_dashboard - the panel's enabled file in Horizon's
# local/enabled
function configure_watcher_cams_dashboard {
    cp "$WATCHER_CAMS_DIR/watcher_cams_dashboard/enabled/$WATCHER_CAMS_DASHBOARD_ENABLED" \
        "$HORIZON_DIR/openstack_dashboard/local/enabled/"
}

# start_watcher_cams_dashboard - Horizon's static files with the panel, and
# Horizon restarted to load it
function start_watcher_cams_dashboard {
    (cd "$HORIZON_DIR" && "$PYTHON" manage.py collectstatic --noinput \
        && "$PYTHON" manage.py compress --force) || \
        die $LINENO "Horizon's static files were not rebuilt"
    restart_apache_server
}

# configure_watcher_cams_watcher - Watcher's drop-in file: planner weights
# and parallelization of the cams actions, the reverting
# workflow engine
function configure_watcher_cams_watcher {
    sudo install -d -o "$STACK_USER" "$WATCHER_CAMS_WATCHER_CONF_D"
    _watcher_cams_deploy watcher-conf \
        "$WATCHER_CAMS_WATCHER_CONF_D/50-watcher-cams.conf"
}

# configure_watcher_cams_agent - the agent's config file and state directory
function configure_watcher_cams_agent {
    sudo install -d -o "$STACK_USER" "$WATCHER_CAMS_CONF_DIR"
    sudo install -d -m 755 "$WATCHER_CAMS_STATE_DIR"
    local args=(agent-conf "$WATCHER_CAMS_AGENT_CONF"
        --host "$WATCHER_CAMS_HOST"
        --connection-uri "$WATCHER_CAMS_LIBVIRT_URI"
        --state-dir "$WATCHER_CAMS_STATE_DIR"
        --transport-url "$(get_transport_url)"
        --reserved-host-memory-mb "$WATCHER_CAMS_RESERVED_HOST_MEMORY_MB")
    if [[ -n "$WATCHER_CAMS_LLC_CPUS" ]]; then
        args+=(--llc-cpus "$WATCHER_CAMS_LLC_CPUS")
    fi
    if [[ "$WATCHER_CAMS_METRICS_PORT" != "0" ]]; then
        args+=(--metrics-port "$WATCHER_CAMS_METRICS_PORT"
            --metrics-address "$WATCHER_CAMS_METRICS_ADDRESS")
    fi
    _watcher_cams_deploy "${args[@]}"
}

# configure_watcher_cams_nova - nova-compute reads the agent's state; with
# WATCHER_CAMS_NOVA_DRIVER=True it runs the driver extension. DevStack
# copies nova.conf to nova-cpu.conf when it starts nova-compute, so the
# settings go into nova.conf (the other Nova services ignore them).
function configure_watcher_cams_nova {
    local args=(nova-compute "$NOVA_CONF"
        --state-dir "$WATCHER_CAMS_STATE_DIR")
    if [[ "$WATCHER_CAMS_NOVA_DRIVER" == "True" ]]; then
        args+=(--driver-extension)
    fi
    local file section option value
    while read -r file section option value; do
        iniset "$file" "$section" "$option" "$value"
    done < <(_watcher_cams_deploy "${args[@]}")
}

# start_watcher_cams_agent - as root: it changes guests through libvirt and
# reads them through their guest agents
function start_watcher_cams_agent {
    run_process watcher-cams-agent \
        "$(get_python_exec_prefix)/watcher-cams-agent --config-file $WATCHER_CAMS_AGENT_CONF" \
        "" root
}

# mark_watcher_cams_images - hw_qemu_guest_agent=yes on the images Nova
# should give a guest-agent channel
function mark_watcher_cams_images {
    local images=() name
    case "$WATCHER_CAMS_GUEST_AGENT_IMAGES" in
        none|"")
            return 0 ;;
        all)
            while read -r name; do
                images+=("$name")
            done < <(openstack --os-cloud devstack-admin image list \
                         -f value -c ID) ;;
        *)
            IFS=, read -r -a images <<< "$WATCHER_CAMS_GUEST_AGENT_IMAGES" ;;
    esac
    for name in "${images[@]}"; do
        openstack --os-cloud devstack-admin image set \
            --property hw_qemu_guest_agent=yes "$name" || \
            die $LINENO "cannot mark image $name for the guest agent"
    done
}

# configure_watcher_cams_tempest - tempest.conf for the plugin's tests; the
# scenarios also need an image with cams-reader (the lab's guest image):
# without WATCHER_CAMS_TEMPEST_IMAGE they are skipped
function configure_watcher_cams_tempest {
    iniset "$TEMPEST_CONFIG" service_available watcher_cams True
    if [[ -z "$WATCHER_CAMS_TEMPEST_IMAGE" ]]; then
        return 0
    fi
    local image_id
    image_id=$(openstack --os-cloud devstack-admin image show \
                   -f value -c id "$WATCHER_CAMS_TEMPEST_IMAGE") || \
        die $LINENO "no image $WATCHER_CAMS_TEMPEST_IMAGE for tempest"
    iniset "$TEMPEST_CONFIG" watcher_cams image_ref "$image_id"
    iniset "$TEMPEST_CONFIG" watcher_cams compute_host "$WATCHER_CAMS_HOST"
    iniset "$TEMPEST_CONFIG" watcher_cams libvirt_uri \
        "$WATCHER_CAMS_LIBVIRT_URI"
}

function stop_watcher_cams_agent {
    stop_process watcher-cams-agent
}

function cleanup_watcher_cams {
    if is_service_enabled watcher-cams-api; then
        remove_uwsgi_config "$WATCHER_CAMS_API_UWSGI_CONF" watcher-cams-api
    fi
    sudo rm -rf "$WATCHER_CAMS_STATE_DIR" "$WATCHER_CAMS_CONF_DIR"
    sudo rm -f "$WATCHER_CAMS_WATCHER_CONF_D/50-watcher-cams.conf"
    if [[ -n "${HORIZON_DIR:-}" ]]; then
        rm -f "$HORIZON_DIR/openstack_dashboard/local/enabled/$WATCHER_CAMS_DASHBOARD_ENABLED"
    fi
}

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing watcher-cams"
    install_watcher_cams
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring watcher-cams"
    if is_service_enabled watcher-decision-engine watcher-applier; then
        configure_watcher_cams_watcher
    fi
    if is_service_enabled watcher-cams-agent; then
        configure_watcher_cams_agent
    fi
    if is_service_enabled n-cpu; then
        configure_watcher_cams_nova
    fi
    if is_service_enabled watcher-cams-api; then
        configure_watcher_cams_api
    fi
    if _watcher_cams_dashboard_enabled; then
        configure_watcher_cams_dashboard
    fi
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    if is_service_enabled watcher-cams-agent; then
        echo_summary "Starting watcher-cams-agent"
        start_watcher_cams_agent
    fi
    if is_service_enabled watcher-cams-api; then
        echo_summary "Starting watcher-cams-api"
        run_process watcher-cams-api \
            "$(which uwsgi) --procname-prefix watcher-cams-api --ini $WATCHER_CAMS_API_UWSGI_CONF"
    fi
    if _watcher_cams_dashboard_enabled; then
        echo_summary "Enabling the watcher-cams panel in Horizon"
        start_watcher_cams_dashboard
    fi
    if is_service_enabled glance; then
        mark_watcher_cams_images
    fi
elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
    if is_service_enabled tempest; then
        echo_summary "Configuring tempest for watcher-cams"
        configure_watcher_cams_tempest
    fi
fi

if [[ "$1" == "unstack" ]]; then
    stop_watcher_cams_agent
    stop_process watcher-cams-api
fi

if [[ "$1" == "clean" ]]; then
    cleanup_watcher_cams
fi

$_XTRACE_WATCHER_CAMS
