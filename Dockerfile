# The image that `train sweep SPEC -print k8s` names by default (-image backtrack-train:latest):
#
#   docker build -t backtrack-train:latest .
#
# It holds the static train binary on PATH and nothing else; the job mounts the sweep's claim at /sweep.
# The build context keeps .git (.dockerignore leaves it in), so go build stamps the commit into the
# binary and every run the image trains records it (summary.json's code).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/train ./cmd/train

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/train /usr/local/bin/train
WORKDIR /sweep
ENTRYPOINT ["train"]
