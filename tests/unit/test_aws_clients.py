"""Every AWS client toolrec makes comes from handler/aws.py, with bounded timeouts and a bounded number of attempts
(botocore's defaults: 60 s timeouts, up to 10 attempts)."""

from __future__ import annotations

import pytest

from handler.aws import CLIENT_OPTIONS, Purpose, aws_client


@pytest.mark.parametrize(("service", "purpose"), sorted(CLIENT_OPTIONS))
def test_each_client_gets_its_bounded_options(service: str, purpose: Purpose) -> None:
    options = CLIENT_OPTIONS[service, purpose]
    client = aws_client(service, purpose, "eu-west-1")
    config = client.meta.config
    assert client.meta.service_model.service_name == service and client.meta.region_name == "eu-west-1"
    assert (config.connect_timeout, config.read_timeout) == (options["connect_timeout"], options["read_timeout"])
    assert config.connect_timeout <= 5 and config.read_timeout <= 900
    assert config.retries["total_max_attempts"] == options["retries"]["total_max_attempts"] <= 5


def test_a_client_without_options_is_refused() -> None:
    with pytest.raises(KeyError):
        aws_client("sqs", "serve")
