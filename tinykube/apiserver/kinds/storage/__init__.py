"""The API group storage.k8s.io: StorageClasses, CSI objects, VolumeAttachments."""
