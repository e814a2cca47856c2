"""Every AWS client toolrec makes: one factory, one table of timeout and retry options, each entry with its reason.

``serve`` clients are the deployed function's (cold start, requests, tool invocations); ``build`` clients are the
build step's, the operator CLI's, ``infra``'s and the scheduled refresh's. A caller that is given a client (tests
pass moto ones) uses it instead. boto3 and botocore are imported inside ``aws_client``: ~0.3 s that a local
server on an index directory and a policy file never needs (tests/unit/test_cold_start_imports.py).
"""

from __future__ import annotations

from typing import Any, Literal

Purpose = Literal["serve", "build"]


def _bounded(connect: int, read: int, attempts: int, standard: bool = True) -> dict[str, Any]:
    """Config options: timeouts in seconds, and ``attempts`` in all (botocore's standard retry mode unless not)."""
    retries: dict[str, Any] = {"total_max_attempts": attempts} | ({"mode": "standard"} if standard else {})
    return {"connect_timeout": connect, "read_timeout": read, "retries": retries}


# botocore.config.Config options. botocore's defaults are 60 s connect and read timeouts and 3 attempts (standard
# retry mode; 10 for DynamoDB where AWS_RETRY_MODE or ~/.aws/config choose legacy). read_timeout bounds each socket
# read, not a whole transfer, so large index files still download and upload.
CLIENT_OPTIONS: dict[tuple[str, Purpose], dict[str, Any]] = {
    # A hung S3 must not hold a cold start for minutes: Lambda's init phase is 10 s (tests/reliability/
    # test_faults_aws.py).
    ("s3", "serve"): _bounded(connect=2, read=3, attempts=2),
    # A throttled table must not hold a request past API Gateway's 30 s (tests/reliability/test_faults_aws.py).
    ("dynamodb", "serve"): _bounded(connect=1, read=2, attempts=3),
    # Invoking a tool's function: after a read timeout or a 5xx it may already have run, so exactly one attempt.
    # The per-call bound is the tool's timeout (the Dispatcher's); the read timeout is Lambda's longest run.
    ("lambda", "serve"): _bounded(connect=5, read=900, attempts=1, standard=False),
    # Publishing uploads whole index files, and S3 may pause long before it answers CompleteMultipartUpload. No
    # deadline here is as short as a cold start's (the refresh function has 900 s): botocore's read timeout and
    # attempts stay, only the connect timeout is bounded.
    ("s3", "build"): _bounded(connect=5, read=60, attempts=3),
    # `toolrec policy --dynamodb`, `toolrec stats --table` and the refresh's usage fold: a few writes or a paged
    # scan of the query log (a page is at most 1 MB), with botocore's attempts: a brief throttle slows them down.
    ("dynamodb", "build"): _bounded(connect=5, read=10, attempts=3),
    # An upstream header's secret, read once per build or refresh run.
    ("secretsmanager", "build"): _bounded(connect=5, read=10, attempts=3),
}


def aws_client(service: str, purpose: Purpose, region: str | None = None) -> Any:
    """A boto3 client for ``service`` with the options CLIENT_OPTIONS holds for that purpose (KeyError if none:
    every client toolrec makes has bounded timeouts). ``region`` None: boto3's own lookup (AWS_REGION, ~/.aws)."""
    options = CLIENT_OPTIONS[service, purpose]
    import boto3
    from botocore.config import Config

    return boto3.client(service, region_name=region, config=Config(**options))  # type: ignore[call-overload]
