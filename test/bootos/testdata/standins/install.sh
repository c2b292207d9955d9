#!/bin/sh
# Stand-in for k3s's install script: records how it was called and what k3s
# would read, installs a k3s stand-in and, unless told to skip it, starts the
# unit as the real script does. Fails, as k3s would not start, without its config.
out=/var/log/capk3s
role=${1:-server}
unit=k3s; [ "$role" = agent ] && unit=k3s-agent
echo "install $* version=${INSTALL_K3S_VERSION:-} skip-download=${INSTALL_K3S_SKIP_DOWNLOAD:-} skip-start=${INSTALL_K3S_SKIP_START:-}" >> $out/calls
[ -z "${INSTALL_K3S_ARTIFACT_URL:-}" ] || echo "$INSTALL_K3S_ARTIFACT_URL" > $out/artifact-url
[ -r /etc/rancher/k3s/config.yaml ] || { echo "install: no /etc/rancher/k3s/config.yaml" >&2; exit 1; }
cp /etc/rancher/k3s/config.yaml $out/k3s-config-at-install.yaml
[ -d /etc/rancher/k3s/config.yaml.d ] && cp -r /etc/rancher/k3s/config.yaml.d $out/k3s-config.d-at-install
mkdir -p /usr/local/bin
cat > /usr/local/bin/k3s <<'K3S'
#!/bin/sh
echo "k3s $* aws-key=${AWS_ACCESS_KEY_ID:-}" >> /var/log/capk3s/calls
K3S
chmod 0755 /usr/local/bin/k3s
echo "$unit" > /var/lib/capk3s-standin/installed
[ "${INSTALL_K3S_SKIP_START:-}" = true ] || touch /var/lib/capk3s-standin/running-$unit
exit 0
