"""Keystone's service project, users and endpoints for the all-in-one cloud.

Run with the cloud's venv; reads {"auth_url", "password", "services":
{name: [type, "port/path"]}} on stdin. One SDK session instead of ~30
openstack CLI calls (a minute of start-up time otherwise).
"""

import json
import sys

import openstack


def main():
    spec = json.load(sys.stdin)
    conn = openstack.connect(
        auth_url=spec['auth_url'], username='admin',
        password=spec['password'], project_name='admin',
        user_domain_name='Default', project_domain_name='Default',
        region_name='RegionOne')
    ident = conn.identity
    domain = ident.find_domain('default')
    project = (ident.find_project('service', domain_id=domain.id)
               or ident.create_project(name='service', domain_id=domain.id))
    roles = [ident.find_role(name) or ident.create_role(name=name)
             for name in ('admin', 'service')]
    for name, (kind, where) in spec['services'].items():
        user = (ident.find_user(name, domain_id=domain.id)
                or ident.create_user(name=name, password=spec['password'],
                                     domain_id=domain.id))
        for role in roles:
            ident.assign_project_role_to_user(project, user, role)
        service = (ident.find_service(name)
                   or ident.create_service(name=name, type=kind))
        for interface in ('public', 'internal', 'admin'):
            ident.create_endpoint(service_id=service.id,
                                  interface=interface,
                                  url='http://127.0.0.1:%s' % where,
                                  region_id='RegionOne')


if __name__ == '__main__':
    main()
