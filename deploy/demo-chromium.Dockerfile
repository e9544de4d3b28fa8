# The headless Chromium of docker-compose.yml's demo-page: Debian's chromium,
# socat and curl (the health check), run as a user without privileges.
# Chromium's new headless mode binds its DevTools port to 127.0.0.1 only
# (--remote-debugging-address is ignored), so socat forwards the container's
# port 9222 to it: compose starts both (docker-compose.yml, demo-page).
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium socat curl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home chrome
USER chrome
WORKDIR /home/chrome
