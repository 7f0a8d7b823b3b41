#!/usr/bin/env bash
set -euo pipefail

echo 'Installing dependencies'
echo 'Checking Go version'
echo 'Checking Docker'
echo 'Creating directories'
echo 'Writing config'
echo 'Generating certificates'
echo 'Starting database'
echo 'Running migrations'
echo 'Seeding data'
echo 'All done'

for svc in api worker scheduler; do
	echo "starting $svc"
	systemctl restart "$svc" || echo 'failed' >&2
done

if [ -f .env ]; then
	source .env
fi
