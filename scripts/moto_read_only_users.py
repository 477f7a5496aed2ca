"""Makes, on a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=7 (authentication
on after these seven setup calls), a bucket and two IAM users with access keys: a writer
allowed s3:* on the bucket, and a reader allowed only s3:Get*, s3:List* and s3:Head* (the
read-only policy; moto names HEAD and list actions apart from AWS, hence the wildcards).
Prints four lines: the reader's key id and secret, then the writer's.

Usage: python moto_read_only_users.py ENDPOINT BUCKET   (the test in
driver/tests/driver/read_only.rs runs it with moto's own virtualenv)."""

import json
import sys

import boto3

endpoint, bucket = sys.argv[1], sys.argv[2]
anyone = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **anyone)
boto3.client("s3", **anyone).create_bucket(Bucket=bucket)
resources = [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]
keys = {}
for user, actions in [("reader", ["s3:Get*", "s3:List*", "s3:Head*"]), ("writer", ["s3:*"])]:
    iam.create_user(UserName=user)
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources}]}
    iam.put_user_policy(UserName=user, PolicyName=user, PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    keys[user] = [key["AccessKeyId"], key["SecretAccessKey"]]
print("\n".join(keys["reader"] + keys["writer"]))
