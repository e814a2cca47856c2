"""Print template.yaml as CloudFormation JSON, translated by the SAM translator (runs in .venv-sam, not .venv).

The translator wants a packaged template, so the local CodeUri becomes the S3 URI `sam package` would write.
Usage: .venv-sam/bin/python tests/infra/sam_translate.py template.yaml
"""

import json
import sys
from pathlib import Path

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The template names no managed policy by name, so no IAM lookup is needed (and none is possible offline)."""

    def load(self) -> dict[str, str]:
        return {}


def main(path: str) -> None:
    template = yaml_parse(Path(path).read_text())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://packaged-artifacts/function.zip"
    print(json.dumps(transform(template, {}, NoManagedPolicies())))


if __name__ == "__main__":
    main(sys.argv[1])
