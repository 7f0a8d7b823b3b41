terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}

resource "aws_s3_bucket" "artifacts" {
  bucket = "example-artifacts"
  tags = {
    team = "platform"
    env  = "prod"
  }
}

resource "aws_iam_role" "ci" {
  name               = "ci-deployer"
  assume_role_policy = data.aws_iam_policy_document.ci.json
}

output "bucket_arn" {
  value = aws_s3_bucket.artifacts.arn
}
