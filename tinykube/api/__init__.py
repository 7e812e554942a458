"""Object model shared by every component: served resources, metadata, selectors, patches, Status errors."""
