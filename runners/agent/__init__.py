"""The agent: a Celery worker on a lab machine that runs the registry's jobs for that machine.

Plain Python like the rest of runners/: it reaches the registry over its HTTPS API with its own token
(runners.client) and the broker with the URL in its credential file; never the database.

  credentials  the credential file written at enrolment (mode 0600) and the environment overrides
  jobs         one job, start to end: claim, run, submit, report (any JobRegistry: HTTP or in-process)
  worker       the Celery app and the `benchreg.run_job` task the registry sends to the agent's queue
  cli          `benchreg agent enroll|start|status`
"""
