# syntax=docker/dockerfile:1

# Build a static binary; module downloads are cached in their own layer.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/focusgate ./cmd/focusgate

# Distroless static: CA certificates for an https upstream, no shell, non-root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/focusgate /usr/local/bin/focusgate
USER nonroot:nonroot
ENV FOCUSGATE_ADDR=:8080 \
    FOCUSGATE_LOG_FORMAT=json
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/focusgate"]
CMD ["serve"]
