"""The forensic jobs: store audit, message trace, traffic report.

Each module has ``run(spark, ...)`` returning its results (for tests and notebooks) and
``main(argv)`` for the command line; the scripts under ``spark/jobs/`` call ``main``.
"""
