"""The batch API group: Jobs and CronJobs."""
