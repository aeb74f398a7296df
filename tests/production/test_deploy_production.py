"""The Kubernetes manifests agree with the code: key secret, metrics port, codec server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scope_tool.config.codec import KEYS_FILE_VARIABLE

KUBERNETES = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"


def _documents(name: str) -> list[dict[str, Any]]:
    return [each for each in yaml.safe_load_all((KUBERNETES / name).read_text()) if each]


def _by_kind(name: str) -> dict[str, dict[str, Any]]:
    return {each["kind"]: each for each in _documents(name)}


def _mounted_key_file(pod: dict[str, Any], container: dict[str, Any]) -> str:
    [volume] = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == "scope-tool-encryption"
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"] is True
    return f"{mount['mountPath']}/keys"


def test_worker_reads_keys_from_the_secret_and_serves_metrics() -> None:
    documents = _by_kind("worker.yaml")
    config = documents["ConfigMap"]["data"]
    template = documents["Deployment"]["spec"]["template"]
    pod = template["spec"]
    [container] = pod["containers"]
    assert config[KEYS_FILE_VARIABLE] == _mounted_key_file(pod, container)
    host, _, port = config["SCOPE_TOOL_METRICS"].rpartition(":")
    assert host == "0.0.0.0"
    assert {"name": "metrics", "containerPort": int(port)} in container["ports"]
    assert template["metadata"]["annotations"]["prometheus.io/port"] == port


def test_codec_server_has_the_keys_a_token_and_a_service() -> None:
    documents = _by_kind("codec-server.yaml")
    assert set(documents) == {"Deployment", "Service"}
    pod = documents["Deployment"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"] == ["scope-tool", "codec-server"]
    args = container["args"]
    port = int(args[args.index("--port") + 1])
    assert args[args.index("--host") + 1] == "0.0.0.0"
    assert "--ui-origin" in args
    env = {each["name"]: each for each in container["env"]}
    assert env[KEYS_FILE_VARIABLE]["value"] == _mounted_key_file(pod, container)
    assert env["SCOPE_TOOL_CODEC_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "scope-tool-codec"
    assert {"name": "codec", "containerPort": port} in container["ports"]
    service = documents["Service"]
    assert service["spec"]["selector"] == documents["Deployment"]["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["port"] == port
