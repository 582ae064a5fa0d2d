from django.urls import re_path

from watcher_cams_dashboard import views

urlpatterns = [
    re_path(r'^$', views.IndexView.as_view(), name='index'),
    re_path(r'^hosts/(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*)/$',
            views.HostView.as_view(), name='host'),
]
