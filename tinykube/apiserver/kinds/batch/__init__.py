"""The API group batch: Jobs and CronJobs."""
