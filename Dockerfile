# syntax=docker/dockerfile:1

# Build a static binary; module downloads are cached in their own layer.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context leaves .git out, so Go cannot stamp the commit itself:
# pass it in for `focusgate version` to report, e.g.
#   docker build --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse HEAD) .
ARG VERSION=""
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/focusgate ./cmd/focusgate

# Distroless static: CA certificates for an https upstream, no shell, non-root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/focusgate /usr/local/bin/focusgate
USER nonroot:nonroot
ENV FOCUSGATE_ADDR=:8080 \
    FOCUSGATE_LOG_FORMAT=json
EXPOSE 8080
# No shell or curl in this image: the binary asks its own /healthz, on
# loopback at the port of FOCUSGATE_ADDR.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/focusgate", "health"]
ENTRYPOINT ["/usr/local/bin/focusgate"]
CMD ["serve"]
