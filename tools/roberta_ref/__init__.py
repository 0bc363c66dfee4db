"""Python code shared by the scripts in tools/ (see README.md here). Import the modules directly,
e.g. `from roberta_ref.reference import forward`: this file imports nothing, so that scripts which
do not need torch (train_bpe.py) do not load it."""
