# specgate: a static binary on distroless, as a non-root user.
#   podman build -t specgate .      (or docker build)
#   podman run --rm -p 127.0.0.1:8080:8080 -v ./specs:/etc/specgate:ro specgate \
#     serve --http 0.0.0.0:8080 --config /etc/specgate/team.yaml
# compose.yaml runs it with Redis in team mode.

FROM docker.io/library/golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/specgate ./cmd/specgate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/specgate /specgate
COPY specs/ /etc/specgate/
# The catalog cache (parsed specs) lives in the user's home.
ENV XDG_CACHE_HOME=/home/nonroot/.cache
USER nonroot:nonroot
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=4s --retries=3 CMD ["/specgate", "healthcheck"]
ENTRYPOINT ["/specgate"]
CMD ["serve", "--http", "0.0.0.0:8080", "--config", "/etc/specgate/team.yaml"]
